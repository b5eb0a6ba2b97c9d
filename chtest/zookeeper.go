package chtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ZooKeeper is a throwaway standalone ZooKeeper (Debian's zookeeper package,
// 3.8) on a free loopback port with its data in a temporary directory: the
// coordination service of a test Cluster. Stop kills it.
type ZooKeeper struct {
	Addr   string // host:port of the client port
	Dir    string
	cmd    *exec.Cmd
	exited chan error
}

// zooJar is where Debian's libzookeeper-java puts the server; its manifest
// names the jars it depends on, so the class path needs only a logger more.
const zooJar = "/usr/share/java/zookeeper.jar"

const zooConfig = `tickTime=500
initLimit=10
syncLimit=5
dataDir={{dir}}/data
clientPort={{port}}
clientPortAddress=127.0.0.1
admin.enableServer=false
maxClientCnxns=0
4lw.commands.whitelist=ruok,srvr
`

// StartZooKeeper starts ZooKeeper's QuorumPeerMain in standalone mode with
// java from PATH and the class path in ZOOKEEPER_CLASSPATH, or Debian's jars.
// It fails with a message naming the package to install when either is
// missing, and returns once the server serves sessions. A server that
// exits because another process took its port first is started again on a
// new port, up to portAttempts times.
func StartZooKeeper(ctx context.Context, dir string) (*ZooKeeper, error) {
	return startZooKeeper(ctx, dir, FreePorts)
}

func startZooKeeper(ctx context.Context, dir string, pick portPicker) (*ZooKeeper, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("java not found on PATH: install ZooKeeper and its runtime (apt-get install -y zookeeper) or run `make deps`")
	}
	cp := os.Getenv("ZOOKEEPER_CLASSPATH")
	if cp == "" {
		if _, err := os.Stat(zooJar); err != nil {
			return nil, fmt.Errorf("%s missing: install ZooKeeper (apt-get install -y zookeeper) or run `make deps`", zooJar)
		}
		cp = zooJar
		if _, err := os.Stat("/usr/share/java/slf4j-simple.jar"); err == nil {
			cp += ":/usr/share/java/slf4j-simple.jar"
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("make zookeeper dir: %w", err)
	}
	for attempt := 1; ; attempt++ {
		ports, err := pick(1)
		if err != nil {
			return nil, err
		}
		z, err := launchZooKeeper(ctx, dir, java, cp, ports[0])
		if err == nil {
			return z, nil
		}
		log := filepath.Join(dir, "zookeeper.log")
		if attempt == portAttempts || !portTaken(log) {
			return nil, err
		}
		setAside(log, attempt)
	}
}

// launchZooKeeper writes the configuration for port, starts the server and
// waits until it serves sessions.
func launchZooKeeper(ctx context.Context, dir, java, cp string, port int) (*ZooKeeper, error) {
	cfg := strings.NewReplacer("{{dir}}", dir, "{{port}}", strconv.Itoa(port)).Replace(zooConfig)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, fmt.Errorf("write zoo.cfg: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "zookeeper.log"))
	if err != nil {
		return nil, fmt.Errorf("create zookeeper log: %w", err)
	}
	cmd := exec.Command(java, "-Xmx128m", "-XX:+UseSerialGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-cp", cp, "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfgPath)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start zookeeper: %w", err)
	}
	z := &ZooKeeper{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Dir: dir, cmd: cmd, exited: make(chan error, 1)}
	go func() { z.exited <- cmd.Wait(); out.Close() }()
	if err := z.waitReady(ctx); err != nil {
		z.Stop()
		return nil, err
	}
	return z, nil
}

// waitReady polls the "srvr" command until the server reports its mode.
// "ruok" is not enough: it answers "imok" as soon as the port listens,
// before sessions are served, and a ClickHouse 18.16 server whose first
// ZooKeeper session fails that way crashes in its DDL worker. The port was
// free when chosen; a server that exits during start (the port was taken
// since, or a broken class path) fails at once with its log's path.
func (z *ZooKeeper) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-z.exited:
			z.exited <- err
			return fmt.Errorf("zookeeper exited during start (%v); see %s", err, filepath.Join(z.Dir, "zookeeper.log"))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if ans, err := z.command("srvr"); err == nil && strings.Contains(ans, "Mode: standalone") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zookeeper on %s not ready after 60s; see %s", z.Addr, filepath.Join(z.Dir, "zookeeper.log"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// command sends a four-letter command and returns the answer.
func (z *ZooKeeper) command(cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", z.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return strings.TrimSpace(string(b)), err
}

// Stop kills ZooKeeper's process group and waits for it.
func (z *ZooKeeper) Stop() {
	if z == nil || z.cmd == nil || z.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-z.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case err := <-z.exited:
		z.exited <- err
	case <-time.After(10 * time.Second):
	}
}
