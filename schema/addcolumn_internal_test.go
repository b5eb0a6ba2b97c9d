package schema

import "testing"

// TestAddedColumnStatements: the migrations that add a column are found
// past their comments, with their table and column, and so are the ALTER
// statements that Apply skips when the column is already there.
func TestAddedColumnStatements(t *testing.T) {
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, m := range ms {
		if sub := addColumn.FindStringSubmatch(m.SQL); sub != nil {
			found[m.Name] = sub[1] + "." + sub[2]
		}
	}
	if len(found) != 8 || found["024_calls_args_validated.sql"] != "calls.args_validated" || found["032_chain_folds_recalls.sql"] != "chain_folds.recalls" ||
		found["035_chains_folded_session.sql"] != "chains_folded.session_key" || found["036_chains_folded_client.sql"] != "chains_folded.client" ||
		found["037_chains_folded_end.sql"] != "chains_folded.end_ms" || found["038_chains_folded_first_call.sql"] != "chains_folded.first_call_id" ||
		found["039_chain_folds_sessions.sql"] != "chain_folds.sessions" || found["042_calls_flags_folded_failures.sql"] != "calls_flags_folded.failures" {
		t.Errorf("migrations adding a column: %v, want 024's calls.args_validated, 032's chain_folds.recalls, 035-038's four chains_folded columns, 039's chain_folds.sessions and 042's calls_flags_folded.failures", found)
	}
	for stmt, want := range map[string]bool{
		"ALTER TABLE calls ADD COLUMN a UInt8":                      true,
		"-- one\n-- two\n  alter table db.calls_local ON CLUSTER c": true,
		"DROP TABLE IF EXISTS db.calls ON CLUSTER c":                false,
		"-- ALTER in a comment\nCREATE TABLE t (a UInt8)":           false,
		"-- only a comment":                                         false,
		"":                                                          false,
	} {
		if got := isAlter(stmt); got != want {
			t.Errorf("isAlter(%q) = %v, want %v", stmt, got, want)
		}
	}
}
