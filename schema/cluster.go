package schema

import (
	"fmt"
	"strings"
)

// Cluster mode (docs/scaling.md). The numbered .sql files describe one
// server and stay the only schema source; ClusterStatements derives the
// cluster DDL from them, so a new migration needs no cluster twin:
//
//   - CREATE TABLE t ... ENGINE = XMergeTree(args) becomes two statements:
//     t_local, a ReplicatedXMergeTree('/clickhouse/tables/{shard}/<db>/t',
//     '{replica}', args) on every node, and t itself, a Distributed table
//     over t_local. Queries and inserts keep naming t.
//   - CREATE MATERIALIZED VIEW v TO r AS SELECT ... FROM t runs on every
//     node as TO r_local ... FROM t_local: each shard rolls up its own
//     calls into its replicated rollup, read through the Distributed r.
//   - CREATE VIEW v AS SELECT ... FROM t reads the Distributed t.
//   - ALTER TABLE t applies every command to t_local; when a command
//     changes the columns (ADD, DROP, MODIFY, RENAME, COMMENT COLUMN), t is
//     dropped and created again AS t_local, with the new columns. 18.16
//     refuses ALTER ON CLUSTER of a table that is not replicated on a
//     cluster whose shards are, and a Distributed table holds no rows here:
//     every insert into it is synchronous (chconn, docs/scaling.md).
//   - DROP TABLE [IF EXISTS] v drops a view that an earlier migration
//     created, on every node; dropping a table has no translation (it
//     would be two, its local and Distributed tables, and their data).
//
// Every statement gets ON CLUSTER <cluster> and names its tables with the
// database, which the DDL worker of each node needs. Anything else is
// rejected with the file name, so an untranslatable migration fails
// TestEveryMigrationHasClusterDDL rather than a deployment.

// ShardingKeys are the sharding keys of the Distributed tables, by table.
// A table not listed is sharded by cityHash64 of its ORDER BY columns,
// which keeps every copy of a row on one shard: ReplacingMergeTree and FINAL
// collapse copies only within a shard. calls is sharded by session instead
// (a subset of its ORDER BY columns, so copies of a call still meet): retry
// chains, re-calls and misclassification evidence follow one (tenant,
// server, session_key) through time, so all of a session's calls live on
// one shard, where FINAL and the per-session grouping see all of them.
var ShardingKeys = map[string]string{
	"calls": "cityHash64(tenant, server, session_key)",
}

// LocalSuffix names the replicated table that holds a shard's rows of the
// Distributed table of the same name without it.
const LocalSuffix = "_local"

// ClusterStatements returns, for each migration of ms in order, the
// statements that apply it to every node of cluster with its tables in
// database.
func ClusterStatements(ms []Migration, cluster, database string) ([][]string, error) {
	tables := map[string]string{} // created by an earlier CREATE TABLE: its Distributed CREATE
	views := map[string]bool{}    // created by an earlier CREATE [MATERIALIZED] VIEW, not dropped since
	out := make([][]string, len(ms))
	for i, m := range ms {
		stmts, err := clusterDDL(m.SQL, cluster, database, tables, views)
		if err != nil {
			return nil, fmt.Errorf("migration %s in cluster mode: %w", m.Name, err)
		}
		out[i] = stmts
	}
	return out, nil
}

func clusterDDL(sql, cluster, db string, tables map[string]string, views map[string]bool) ([]string, error) {
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	p := &parser{sql: sql, toks: toks}
	switch {
	case p.keywords("CREATE", "TABLE"):
		return p.createTable(cluster, db, tables)
	case p.keywords("CREATE", "MATERIALIZED", "VIEW"):
		return p.createView(cluster, db, tables, views, true)
	case p.keywords("CREATE", "VIEW"):
		return p.createView(cluster, db, tables, views, false)
	case p.keywords("ALTER", "TABLE"):
		return p.alterTable(cluster, db, tables)
	case p.keywords("DROP", "TABLE"):
		return p.dropView(cluster, db, views)
	}
	return nil, fmt.Errorf("cannot translate %q: cluster mode knows CREATE TABLE, CREATE [MATERIALIZED] VIEW, ALTER TABLE and DROP TABLE of a view (schema/cluster.go)", p.head())
}

// createTable translates CREATE TABLE [IF NOT EXISTS] t (...) ENGINE = ...
func (p *parser) createTable(cluster, db string, tables map[string]string) ([]string, error) {
	p.ifNotExists()
	name, nameTok, err := p.tableName()
	if err != nil {
		return nil, err
	}
	if !p.at("(") {
		return nil, fmt.Errorf("CREATE TABLE %s: want a column list after the name", name)
	}
	p.skipGroup()
	if !p.keywords("ENGINE", "=") {
		return nil, fmt.Errorf("CREATE TABLE %s: want ENGINE = after the columns", name)
	}
	engTok := p.pos
	engine := p.toks[engTok].text
	p.pos++
	if !strings.HasSuffix(engine, "MergeTree") || strings.HasPrefix(engine, "Replicated") {
		return nil, fmt.Errorf("CREATE TABLE %s: engine %s has no replicated form here; use a (non-replicated) *MergeTree", name, engine)
	}
	args, argsEnd := "", engTok+1
	if p.at("(") {
		open := p.pos
		p.skipGroup()
		argsEnd = p.pos
		args = strings.TrimSpace(p.sql[p.toks[open].end:p.toks[argsEnd-1].start])
	}
	orderBy, err := p.orderBy()
	if err != nil {
		return nil, fmt.Errorf("CREATE TABLE %s: %w", name, err)
	}
	key, ok := ShardingKeys[name]
	if !ok {
		key = "cityHash64(" + strings.Join(orderBy, ", ") + ")"
		if len(orderBy) == 0 {
			key = "rand()"
		}
	}
	replArgs := fmt.Sprintf("'/clickhouse/tables/{shard}/%s/%s', '{replica}'", db, name)
	if args != "" {
		replArgs += ", " + args
	}
	local := p.splice(
		edit{nameTok, nameTok + 1, fmt.Sprintf("%s.%s%s ON CLUSTER %s", db, name, LocalSuffix, cluster)},
		edit{engTok, argsEnd, fmt.Sprintf("Replicated%s(%s)", engine, replArgs)},
	)
	dist := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s ON CLUSTER %s AS %s.%s%s ENGINE = Distributed(%s, %s, %s%s, %s)",
		db, name, cluster, db, name, LocalSuffix, cluster, db, name, LocalSuffix, key)
	tables[name] = dist
	return []string{local, dist}, nil
}

// createView translates CREATE [MATERIALIZED] VIEW [IF NOT EXISTS] v [TO t]
// AS SELECT: a materialized view reads and writes local tables, a plain view
// reads the Distributed ones.
func (p *parser) createView(cluster, db string, tables map[string]string, views map[string]bool, materialized bool) ([]string, error) {
	p.ifNotExists()
	name, nameTok, err := p.tableName()
	if err != nil {
		return nil, err
	}
	views[name] = true
	edits := []edit{{nameTok, nameTok + 1, fmt.Sprintf("%s.%s ON CLUSTER %s", db, name, cluster)}}
	suffix := ""
	if materialized {
		if !p.keywords("TO") {
			return nil, fmt.Errorf("MATERIALIZED VIEW %s: want TO <table>; a view with its own engine has no replicated form here", name)
		}
		target, targetTok, err := p.tableName()
		if err != nil {
			return nil, err
		}
		if tables[target] == "" {
			return nil, fmt.Errorf("MATERIALIZED VIEW %s: target %s is not a table created by an earlier migration", name, target)
		}
		edits = append(edits, edit{targetTok, targetTok + 1, db + "." + target + LocalSuffix})
		suffix = LocalSuffix
	}
	// Every table read after FROM or JOIN, in the query and its subqueries.
	for i := p.pos; i+1 < len(p.toks); i++ {
		kw := strings.ToUpper(p.toks[i].text)
		next := p.toks[i+1]
		if (kw == "FROM" || kw == "JOIN") && next.kind == tokIdent && tables[next.text] != "" &&
			(i+2 >= len(p.toks) || p.toks[i+2].text != ".") {
			edits = append(edits, edit{i + 1, i + 2, db + "." + next.text + suffix})
		}
	}
	return []string{p.splice(edits...)}, nil
}

// dropView translates DROP TABLE [IF EXISTS] v, where v is a view an
// earlier migration created: a materialized view runs on every node, so it
// is dropped on every node.
func (p *parser) dropView(cluster, db string, views map[string]bool) ([]string, error) {
	p.keywords("IF", "EXISTS")
	name, nameTok, err := p.tableName()
	if err != nil {
		return nil, err
	}
	if !views[name] {
		return nil, fmt.Errorf("DROP TABLE %s: not a view created by an earlier migration; dropping a table has no cluster form here", name)
	}
	if p.at(";") {
		p.pos++
	}
	if p.pos < len(p.toks) {
		return nil, fmt.Errorf("DROP TABLE %s: unexpected %q after the name", name, p.toks[p.pos].text)
	}
	delete(views, name)
	return []string{p.splice(edit{nameTok, nameTok + 1, fmt.Sprintf("%s.%s ON CLUSTER %s", db, name, cluster)})}, nil
}

// alterTable translates ALTER TABLE t <commands>.
func (p *parser) alterTable(cluster, db string, tables map[string]string) ([]string, error) {
	name, _, err := p.tableName()
	if err != nil {
		return nil, err
	}
	dist := tables[name]
	if dist == "" {
		return nil, fmt.Errorf("ALTER TABLE %s: not a table created by an earlier migration", name)
	}
	var all []string
	columns := false
	for _, cmd := range p.splitCommands() {
		all = append(all, cmd)
		words := strings.Fields(strings.ToUpper(cmd))
		columns = columns || len(words) > 1 && words[1] == "COLUMN" && words[0] != "CLEAR"
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("ALTER TABLE %s: no commands", name)
	}
	out := []string{fmt.Sprintf("ALTER TABLE %s.%s%s ON CLUSTER %s %s", db, name, LocalSuffix, cluster, strings.Join(all, ", "))}
	if columns {
		out = append(out, fmt.Sprintf("DROP TABLE IF EXISTS %s.%s ON CLUSTER %s", db, name, cluster), dist)
	}
	return out, nil
}

// ClusterForm translates one statement that changes a table's rows or
// parts, written for a single server (ALTER TABLE t DELETE WHERE ..., DROP
// PARTITION ..., MODIFY TTL ...; OPTIMIZE TABLE t PARTITION ... FINAL), to
// its cluster form: the same on database.t_local, ON CLUSTER cluster. The
// replicated t_local runs it on each shard and replicates it; t, the
// Distributed table, holds no rows to change. ALTER commands that change
// columns are refused (only migrations change the schema, through
// ClusterStatements), and so is anything but one ALTER or OPTIMIZE TABLE of
// an unqualified name. The tables its subqueries read get the database
// too: on a cluster they are the Distributed tables, which read every
// shard. Comments before the statement are dropped; bound parameters
// (@name) are kept as they are.
func ClusterForm(sql, cluster, database string) (string, error) {
	toks, err := lex(sql)
	if err != nil {
		return "", err
	}
	p := &parser{sql: sql, toks: toks}
	verb := "ALTER"
	if p.keywords("OPTIMIZE", "TABLE") {
		verb = "OPTIMIZE"
	} else if !p.keywords("ALTER", "TABLE") {
		return "", fmt.Errorf("cluster form of %q: not an ALTER or OPTIMIZE TABLE", p.head())
	}
	name, _, err := p.tableName()
	if err != nil {
		return "", err
	}
	for i, t := range toks[:len(toks)-1] {
		if t.kind == tokPunct && t.text == ";" && i >= p.pos {
			return "", fmt.Errorf("%s TABLE %s: one statement at a time", verb, name)
		}
	}
	from := p.pos
	cmds := p.splitCommands()
	if len(cmds) == 0 {
		return "", fmt.Errorf("%s TABLE %s: no commands", verb, name)
	}
	for _, cmd := range cmds {
		if words := strings.Fields(strings.ToUpper(cmd)); verb == "ALTER" && len(words) > 1 && words[1] == "COLUMN" {
			return "", fmt.Errorf("ALTER TABLE %s %s: only a migration may change columns", name, cmd)
		}
	}
	// The commands as written, each table a subquery reads (FROM or JOIN
	// a name, not a table function) named with the database: the DDL
	// worker of each node runs the statement outside it.
	end := len(toks)
	if toks[end-1].text == ";" {
		end--
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s TABLE %s.%s%s ON CLUSTER %s ", verb, database, name, LocalSuffix, cluster)
	at := toks[from].start
	for i := from; i+1 < end; i++ {
		kw, next := toks[i], toks[i+1]
		if kw.kind != tokIdent || kw.quoted || !strings.EqualFold(kw.text, "FROM") && !strings.EqualFold(kw.text, "JOIN") ||
			next.kind != tokIdent || next.quoted || i+2 < end && (toks[i+2].text == "." || toks[i+2].text == "(") {
			continue
		}
		b.WriteString(sql[at:next.start])
		b.WriteString(database + "." + next.text)
		at = next.end
	}
	b.WriteString(sql[at:toks[end-1].end])
	return b.String(), nil
}

// Verb is the first keyword of sql, upper-cased, after any comments:
// "SELECT", "INSERT", "ALTER", ...; empty when sql has none.
func Verb(sql string) string {
	toks, err := lex(sql)
	if err != nil || len(toks) == 0 || toks[0].kind != tokIdent || toks[0].quoted {
		return ""
	}
	return strings.ToUpper(toks[0].text)
}

// parser walks the tokens of one statement.
type parser struct {
	sql  string
	toks []token
	pos  int
}

// keywords consumes the given words (case-insensitive) if they come next.
func (p *parser) keywords(words ...string) bool {
	if p.pos+len(words) > len(p.toks) {
		return false
	}
	for i, w := range words {
		t := p.toks[p.pos+i]
		if t.quoted || !strings.EqualFold(t.text, w) {
			return false
		}
	}
	p.pos += len(words)
	return true
}

func (p *parser) ifNotExists() { p.keywords("IF", "NOT", "EXISTS") }

func (p *parser) at(text string) bool { return p.pos < len(p.toks) && p.toks[p.pos].text == text }

// tableName consumes an unqualified table name: the database comes from
// the connection in single-server mode and from ClusterStatements here.
func (p *parser) tableName() (string, int, error) {
	if p.pos >= len(p.toks) || p.toks[p.pos].kind != tokIdent {
		return "", 0, fmt.Errorf("want a table name after %q", p.head())
	}
	i := p.pos
	p.pos++
	if p.at(".") {
		return "", 0, fmt.Errorf("table %s.…: migrations name tables without a database", p.toks[i].text)
	}
	return p.toks[i].text, i, nil
}

// skipGroup consumes a parenthesised group and everything in it.
func (p *parser) skipGroup() {
	depth := 0
	for ; p.pos < len(p.toks); p.pos++ {
		switch p.toks[p.pos].text {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				p.pos++
				return
			}
		}
	}
}

// orderBy finds ORDER BY at depth 0 and returns its columns: a name, or a
// parenthesised list of names. Expressions and tuple() give none.
func (p *parser) orderBy() ([]string, error) {
	for p.pos < len(p.toks) {
		if p.keywords("ORDER", "BY") {
			if p.at("(") {
				start := p.pos
				p.skipGroup()
				var cols []string
				for _, t := range p.toks[start+1 : p.pos-1] {
					switch {
					case t.text == ",":
					case t.kind == tokIdent:
						cols = append(cols, t.text)
					default:
						return nil, nil
					}
				}
				if len(cols) != (p.pos-start-1)/2 {
					return nil, nil // an expression, not a list of names
				}
				return cols, nil
			}
			if p.pos < len(p.toks) && p.toks[p.pos].kind == tokIdent && (p.pos+1 >= len(p.toks) || p.toks[p.pos+1].text != "(") {
				return []string{p.toks[p.pos].text}, nil
			}
			return nil, nil
		}
		if p.at("(") {
			p.skipGroup()
			continue
		}
		p.pos++
	}
	return nil, fmt.Errorf("no ORDER BY")
}

// splitCommands returns the text of the comma-separated commands from the
// current token to the end, split at depth 0.
func (p *parser) splitCommands() []string {
	var out []string
	depth, start := 0, p.pos
	flush := func(end int) {
		if start < end {
			out = append(out, strings.TrimSpace(p.sql[p.toks[start].start:p.toks[end-1].end]))
		}
	}
	for i := p.pos; i < len(p.toks); i++ {
		switch p.toks[i].text {
		case "(":
			depth++
		case ")":
			depth--
		case ",":
			if depth == 0 {
				flush(i)
				start = i + 1
			}
		}
	}
	end := len(p.toks)
	if end > start && p.toks[end-1].text == ";" {
		end--
	}
	flush(end)
	return out
}

// head is the start of the statement, for error messages.
func (p *parser) head() string {
	var words []string
	for _, t := range p.toks[:min(4, len(p.toks))] {
		words = append(words, t.text)
	}
	return strings.Join(words, " ")
}

// edit replaces tokens [from, to) with text.
type edit struct {
	from, to int
	text     string
}

// splice applies edits, in token order, to the statement text. Comments
// and layout outside the edited tokens are kept.
func (p *parser) splice(edits ...edit) string {
	var b strings.Builder
	at := 0
	for _, e := range edits {
		b.WriteString(p.sql[at:p.toks[e.from].start])
		b.WriteString(e.text)
		at = p.toks[e.to-1].end
	}
	b.WriteString(p.sql[at:])
	return strings.TrimRight(strings.TrimSpace(b.String()), ";")
}

// token is one lexeme of a statement with its byte range.
type token struct {
	kind       tokKind
	text       string // identifiers unquoted
	quoted     bool
	start, end int
}

type tokKind int

const (
	tokIdent tokKind = iota
	tokString
	tokNumber
	tokPunct
)

// lex splits a statement into tokens, dropping whitespace and comments.
func lex(sql string) ([]token, error) {
	var out []token
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("unterminated comment")
			}
			i += end + 4
		case c == '\'' || c == '`' || c == '"':
			j := i + 1
			for j < len(sql) && sql[j] != c {
				if sql[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(sql) {
				return nil, fmt.Errorf("unterminated %c quote", c)
			}
			t := token{kind: tokString, text: sql[i : j+1], start: i, end: j + 1}
			if c != '\'' {
				t.kind, t.text, t.quoted = tokIdent, sql[i+1:j], true
			}
			out = append(out, t)
			i = j + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(sql) && (sql[j] == '_' || sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= 'A' && sql[j] <= 'Z' || sql[j] >= '0' && sql[j] <= '9') {
				j++
			}
			out = append(out, token{kind: tokIdent, text: sql[i:j], start: i, end: j})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(sql) && (sql[j] == '.' || sql[j] >= '0' && sql[j] <= '9' || sql[j] >= 'a' && sql[j] <= 'z' || sql[j] >= 'A' && sql[j] <= 'Z') {
				j++
			}
			out = append(out, token{kind: tokNumber, text: sql[i:j], start: i, end: j})
			i = j
		default:
			out = append(out, token{kind: tokPunct, text: sql[i : i+1], start: i, end: i + 1})
			i++
		}
	}
	return out, nil
}
