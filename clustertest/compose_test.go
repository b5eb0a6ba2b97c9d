package clustertest

import (
	"encoding/xml"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
)

// TestComposeClusterConfig validates docker-compose.cluster.yml with
// docker-compose (no Docker engine needed) and checks that it agrees with
// deploy/clickhouse-cluster/cluster.xml: every node the cluster names is a
// service with its own shard and replica macros and data volume, every
// mcplens service runs in cluster mode on that cluster, every ingest has a
// spool volume of its own, and every mounted file exists.
func TestComposeClusterConfig(t *testing.T) {
	dc, err := exec.LookPath("docker-compose")
	if err != nil {
		t.Fatalf("docker-compose not found (%v); `make deps` installs it", err)
	}
	if out, err := exec.Command(dc, "-f", "../docker-compose.cluster.yml", "config", "-q").CombinedOutput(); err != nil {
		t.Fatalf("docker-compose config -q: %v\n%s", err, out)
	}
	out, err := exec.Command(dc, "-f", "../docker-compose.cluster.yml", "config").Output()
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Entrypoint  []string          `yaml:"entrypoint"`
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"` // docker-compose v1 prints the short form, absolute
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(out, &compose); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile("../deploy/clickhouse-cluster/cluster.xml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Clusters struct {
			List []struct {
				XMLName xml.Name
				Shards  []struct {
					Internal bool `xml:"internal_replication"`
					Replicas []struct {
						Host string `xml:"host"`
					} `xml:"replica"`
				} `xml:"shard"`
			} `xml:",any"`
		} `xml:"remote_servers"`
	}
	if err := xml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Clusters.List) != 1 {
		t.Fatalf("cluster.xml defines %d clusters, want 1", len(cfg.Clusters.List))
	}
	name := cfg.Clusters.List[0].XMLName.Local
	macros := map[string]bool{}
	for i, shard := range cfg.Clusters.List[0].Shards {
		if !shard.Internal {
			t.Errorf("cluster.xml shard %d: internal_replication must be true for replicated tables", i+1)
		}
		for _, r := range shard.Replicas {
			s, ok := compose.Services[r.Host]
			if !ok {
				t.Errorf("cluster.xml names node %s, which is no service", r.Host)
				continue
			}
			if s.Environment["MCPLENS_REPLICA"] != r.Host {
				t.Errorf("service %s: MCPLENS_REPLICA %q, want its host name (the replica macro and interserver host)", r.Host, s.Environment["MCPLENS_REPLICA"])
			}
			if want := "0" + string(rune('1'+i)); s.Environment["MCPLENS_SHARD"] != want {
				t.Errorf("service %s: MCPLENS_SHARD %q, want %q", r.Host, s.Environment["MCPLENS_SHARD"], want)
			}
			key := s.Environment["MCPLENS_SHARD"] + "/" + s.Environment["MCPLENS_REPLICA"]
			if macros[key] {
				t.Errorf("service %s: macros %s used twice", r.Host, key)
			}
			macros[key] = true
		}
	}
	if len(macros) != 4 {
		t.Errorf("the cluster has %d nodes, want 2 shards × 2 replicas", len(macros))
	}

	volumes := map[string]string{}
	mcplens := 0
	for svc, s := range compose.Services {
		for _, v := range s.Volumes {
			source, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(source, "/") {
				if _, err := os.Stat(source); err != nil {
					t.Errorf("service %s mounts %s: %v", svc, source, err)
				}
				continue
			}
			if prev, ok := volumes[source]; ok {
				t.Errorf("volume %s is used by %s and %s; data directories and spools are not shared", source, prev, svc)
			}
			volumes[source] = svc
		}
		if len(s.Entrypoint) == 0 || !strings.HasPrefix(s.Entrypoint[0], "/usr/local/bin/") {
			continue
		}
		mcplens++
		if s.Environment["CLICKHOUSE_CLUSTER"] != name {
			t.Errorf("service %s: CLICKHOUSE_CLUSTER %q, want %q", svc, s.Environment["CLICKHOUSE_CLUSTER"], name)
		}
		for _, a := range strings.Split(s.Environment["CLICKHOUSE_ADDR"], ",") {
			host, _, _ := strings.Cut(a, ":")
			if _, ok := compose.Services[host]; !ok {
				t.Errorf("service %s: CLICKHOUSE_ADDR names %s, which is no service", svc, host)
			}
		}
		if slices.Contains(s.Entrypoint, "/usr/local/bin/ingest") && s.Environment["MCPLENS_SPOOL_DIR"] != "" && len(s.Volumes) == 0 {
			t.Errorf("service %s spools to %s without a volume: a restart would lose acknowledged calls", svc, s.Environment["MCPLENS_SPOOL_DIR"])
		}
	}
	if mcplens < 4 {
		t.Errorf("%d mcplens services, want migrate, two ingest and api", mcplens)
	}
}
