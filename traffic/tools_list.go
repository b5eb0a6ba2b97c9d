package traffic

import "time"

// ToolsList calls emit with one tools/list capture line per tenant and
// server of the demo fleet, timed one second before cfg.Start, so that an
// ingest that reads them before the lines of Generate validates every call
// against its tool's schema (docs/schemas.md). The definitions are shaped
// as each server's SDK writes them (Pydantic for kb, jsonschema-go for crm,
// mcp-go for payments, zod for weather and github) and describe what the
// healthy calls of Generate send: only the failure stories break them
// (misspelled enum values, out-of-range days and limits, a currency the
// server does not take, structured errors in place of records). The same
// Config gives the same bytes.
func ToolsList(cfg Config, emit func(line []byte) error) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	at := cfg.Start.Add(-time.Second).Format("2006-01-02T15:04:05.000Z")
	for _, tenant := range cfg.Tenants {
		for _, srv := range servers {
			line := obj{
				{"time", at},
				{"duration_ms", 4},
				{"tenant", tenant},
				{"server", srv.name},
				{"session_id", "tools-list-" + tenant + "-" + srv.name},
				{"client", "mcplens-sample"},
				{"protocol_version", "2025-06-18"},
				{"request", obj{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}, {"params", obj{}}}},
				{"response", obj{{"jsonrpc", "2.0"}, {"id", 1}, {"result", obj{{"tools", toolDefinitions(srv)}}}}},
			}
			if err := emit(appendJSON(nil, line)); err != nil {
				return err
			}
		}
	}
	return nil
}

// str is a JSON Schema string property.
func str(description string) obj { return obj{{"type", "string"}, {"description", description}} }

// enumOf is a JSON Schema string enum.
func enumOf(description string, values ...string) obj {
	return obj{{"type", "string"}, {"enum", values}, {"description", description}}
}

// toolDefinitions returns the tools a server lists.
func toolDefinitions(srv *server) arr {
	readOnly := obj{{"readOnlyHint", true}, {"openWorldHint", false}}
	switch srv {
	case kb: // Python SDK: Pydantic titles, no additionalProperties
		return arr{
			obj{{"name", "search_docs"}, {"title", "Search documents"},
				{"description", "Full-text search in one department's documents; returns titles, ids and snippets."},
				{"inputSchema", obj{
					{"type", "object"},
					{"title", "search_docsArguments"},
					{"properties", obj{
						{"department", obj{{"type", "string"}, {"title", "Department"},
							{"enum", []string{"finance", "engineering", "hr", "sales", "legal", "it"}}}},
						{"q", obj{{"type", "string"}, {"title", "Q"}, {"minLength", 1}}},
						{"limit", obj{{"type", "integer"}, {"title", "Limit"}, {"minimum", 1}, {"maximum", 50}, {"default", 5}}},
					}},
					{"required", []string{"department", "q"}},
				}},
				{"annotations", readOnly}},
			obj{{"name", "get_doc"}, {"title", "Get document"},
				{"description", "The full text of one document by id (D-1001)."},
				{"inputSchema", obj{
					{"type", "object"},
					{"title", "get_docArguments"},
					{"properties", obj{{"doc_id", obj{{"type", "string"}, {"title", "Doc Id"}, {"pattern", `^D-\d+$`}}}}},
					{"required", []string{"doc_id"}},
				}},
				{"annotations", readOnly}},
		}
	case crm: // go-sdk: additionalProperties false, outputSchema from the result type
		return arr{
			obj{{"name", "lookup_customer"},
				{"description", "A customer's record: plan, ARR, owner, health and open tickets."},
				{"inputSchema", obj{
					{"type", "object"},
					{"properties", obj{{"customer_id", str("customer id, e.g. C-1042")}}},
					{"required", []string{"customer_id"}},
					{"additionalProperties", false},
				}},
				{"outputSchema", obj{
					{"type", "object"},
					{"properties", obj{
						{"customer_id", obj{{"type", "string"}}},
						{"name", obj{{"type", "string"}}},
						{"plan", obj{{"type", "string"}}},
						{"arr", obj{{"type", "object"}, {"properties", obj{
							{"amount", obj{{"type", "number"}}},
							{"currency", obj{{"type", "string"}}},
						}}}},
						{"owner", obj{{"type", "string"}}},
						{"region", obj{{"type", "string"}}},
						{"health", obj{{"type", "string"}}},
						{"seats", obj{{"type", "integer"}, {"minimum", 0}}},
						{"open_tickets", obj{{"type", "array"}, {"items", obj{{"type", "string"}}}}},
						{"last_contact", obj{{"type", "string"}}},
						{"notes", obj{{"type", "string"}}},
					}},
					{"required", []string{"customer_id", "name", "plan"}},
				}},
				{"annotations", readOnly}},
			obj{{"name", "update_ticket"},
				{"description", "Set a ticket's status and append a note."},
				{"inputSchema", obj{
					{"type", "object"},
					{"properties", obj{
						{"ticket_id", str("ticket id, e.g. T-88231")},
						{"status", enumOf("new status", "open", "pending", "resolved", "closed")},
						{"note", str("note appended to the ticket")},
					}},
					{"required", []string{"ticket_id", "status"}},
					{"additionalProperties", false},
				}},
				{"annotations", obj{{"readOnlyHint", false}, {"destructiveHint", false}, {"idempotentHint", true}, {"openWorldHint", false}}}},
		}
	case payments: // mcp-go
		return arr{
			obj{{"name", "get_invoice"},
				{"description", "An invoice with its lines, amount due and status."},
				{"inputSchema", obj{
					{"type", "object"},
					{"properties", obj{{"invoice_id", str("invoice id, e.g. INV-2026-00042")}}},
					{"required", []string{"invoice_id"}},
				}},
				{"outputSchema", obj{
					{"type", "object"},
					{"properties", obj{
						{"invoice_id", obj{{"type", "string"}}},
						{"customer_id", obj{{"type", "string"}}},
						{"customer_name", obj{{"type", "string"}}},
						{"currency", enumOf("ISO 4217", "CNY", "EUR", "USD")},
						{"amount_due", obj{{"type", "number"}, {"minimum", 0}}},
						{"status", enumOf("payment status", "paid", "open", "overdue")},
						{"issued_at", obj{{"type", "string"}}},
						{"due_at", obj{{"type", "string"}}},
						{"lines", obj{{"type", "array"}, {"items", obj{
							{"type", "object"},
							{"properties", obj{
								{"description", obj{{"type", "string"}}},
								{"quantity", obj{{"type", "integer"}, {"minimum", 1}}},
								{"unit_price", obj{{"type", "number"}}},
							}},
							{"required", []string{"description", "quantity", "unit_price"}},
						}}}},
					}},
					{"required", []string{"invoice_id", "currency", "amount_due", "status"}},
				}},
				{"annotations", readOnly}},
			obj{{"name", "refund"},
				{"description", "Refund part of an invoice to the original payment method. Each call creates a refund."},
				{"inputSchema", obj{
					{"type", "object"},
					{"properties", obj{
						{"invoice_id", str("invoice to refund")},
						{"amount", obj{{"type", "number"}, {"exclusiveMinimum", 0}, {"description", "amount in the invoice currency"}}},
						{"currency", enumOf("the invoice currency", "CNY", "EUR", "USD")},
					}},
					{"required", []string{"invoice_id", "amount", "currency"}},
				}},
				{"annotations", obj{{"readOnlyHint", false}, {"destructiveHint", true}, {"openWorldHint", true}}}},
		}
	case weather: // TypeScript SDK with zod: draft-07 declared
		return arr{
			obj{{"name", "get_forecast"},
				{"description", "Daily forecast for a city, 1 to 14 days."},
				{"inputSchema", obj{
					{"$schema", "http://json-schema.org/draft-07/schema#"},
					{"type", "object"},
					{"properties", obj{
						{"city", obj{{"type", "string"}, {"minLength", 1}}},
						{"days", obj{{"type", "integer"}, {"minimum", 1}, {"maximum", 14}}},
					}},
					{"required", []string{"city", "days"}},
					{"additionalProperties", false},
				}},
				{"annotations", obj{{"readOnlyHint", true}, {"openWorldHint", true}}}},
		}
	default: // github: TypeScript SDK 1.x
		return arr{
			obj{{"name", "search_issues"},
				{"description", "Search issues of a repository (owner/name; owner/* asks which one)."},
				{"inputSchema", obj{
					{"$schema", "http://json-schema.org/draft-07/schema#"},
					{"type", "object"},
					{"properties", obj{
						{"repo", obj{{"type", "string"}, {"pattern", `^[\w.-]+/[\w.*-]+$`}}},
						{"query", obj{{"type", "string"}}},
						{"state", obj{{"type", "string"}, {"enum", []string{"open", "closed", "all"}}, {"default", "open"}}},
					}},
					{"required", []string{"repo", "query"}},
					{"additionalProperties", false},
				}},
				{"annotations", readOnly}},
		}
	}
}
