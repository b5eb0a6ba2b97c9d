package queries

import "context"

// CallListLatestOnly is CallList with every page read by the form that
// takes each call's latest ingest only (calls_page_latest.sql), which
// CallList switches to once a candidate is dropped: for the scale
// benchmark, which measures that form on its own.
func CallListLatestOnly(ctx context.Context, db DB, f Filter, o CallsOptions) ([]Call, error) {
	return callList(ctx, db, f, o, callsLatestSQL)
}
