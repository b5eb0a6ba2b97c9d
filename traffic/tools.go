package traffic

import (
	"fmt"
	"time"
)

// The tools of the demo fleet. Each builder answers its arguments from the
// world in corpus.go the way a healthy server would; stories replace the
// result when something goes wrong.

// ms returns a uniform duration in [lo, hi] milliseconds.
func (g *session) ms(lo, hi int) time.Duration {
	return g.between(time.Duration(lo)*time.Millisecond, time.Duration(hi)*time.Millisecond)
}

// kb.search_docs. limit 0 leaves the optional argument out.
func (g *session) searchDocs(dept, q string, limit int) call {
	hits := searchHits(dept, q)
	args := obj{{"department", dept}, {"q", q}}
	shown := 5
	if limit > 0 {
		args = append(args, kv{"limit", limit})
		shown = limit
	}
	return call{srv: kb, tool: "search_docs", args: args, dur: g.ms(80, 600),
		result: g.ok(kb, searchText(dept, q, hits, shown))}
}

// randomSearch is a search_docs call that finds something.
func (g *session) randomSearch() (call, docQuery) {
	dq := pick(g.rng, docQueries)
	return g.searchDocs(dq.dept, dq.q, g.limit()), dq
}

// limit is the optional search_docs limit a model sends; 0 leaves it out.
func (g *session) limit() int { return pick(g.rng, []int{0, 0, 3, 5, 5, 10}) }

// kb.get_doc of an existing document.
func (g *session) getDoc(d doc) call {
	return call{srv: kb, tool: "get_doc", args: obj{{"doc_id", d.id}}, dur: g.ms(40, 300),
		result: g.ok(kb, docText(d))}
}

// crm.lookup_customer: structuredContent mirrored in a text block.
func (g *session) lookupCustomer(c customer) call {
	return call{srv: crm, tool: "lookup_customer", args: obj{{"customer_id", c.id}}, dur: g.ms(30, 220),
		result: g.okStructured(crm, customerRecord(c, g.t))}
}

// crm.update_ticket.
func (g *session) updateTicket(id, status, note string) call {
	return call{srv: crm, tool: "update_ticket",
		args: obj{{"ticket_id", id}, {"status", status}, {"note", note}}, dur: g.ms(90, 450),
		result: g.ok(crm, ticketText(id, status, note, g.t))}
}

// randomTicket picks a ticket of a customer that has one.
func (g *session) randomTicket() string {
	for {
		c := pick(g.rng, customers)
		if len(c.tickets) > 0 {
			return pick(g.rng, c.tickets)
		}
	}
}

// payments.get_invoice: structuredContent mirrored in a text block.
func (g *session) getInvoice(id string) call {
	return call{srv: payments, tool: "get_invoice", args: obj{{"invoice_id", id}}, dur: g.ms(50, 260),
		result: g.okStructured(payments, invoiceRecord(id, g.t))}
}

// refundArgs returns a partial refund of invoice id in its currency.
func (g *session) refundArgs(id string) (amount float64, currency string) {
	inv := invoiceRecord(id, g.t)
	due := inv.get("amount_due").(float64)
	amount = float64(int(due*float64(5+g.rng.IntN(45))/100)) + float64(g.rng.IntN(2))*0.5
	return amount, inv.get("currency").(string)
}

// payments.refund.
func (g *session) refund(id string, amount float64, currency string) call {
	return call{srv: payments, tool: "refund", args: obj{{"invoice_id", id}, {"amount", amount}, {"currency", currency}},
		dur: g.ms(400, 2500),
		result: g.ok(payments, fmt.Sprintf("Refund RF-%s created for %s: %.2f %s, status pending. "+
			"Funds return to the original payment method in 3-5 business days.", g.base32(8), id, amount, currency))}
}

// weather.get_forecast. A city the service does not know gets an empty
// answer, not an error.
func (g *session) forecast(name string, days int) call {
	c := call{srv: weather, tool: "get_forecast", args: obj{{"city", name}, {"days", days}}, dur: g.ms(150, 1200)}
	var ct city
	found := false
	for _, x := range cities {
		if x.name == name {
			ct, found = x, true
		}
	}
	if !found {
		msg := "No forecast available for " + name
		if g.client.stateless {
			c.result = g.result(weather, arr{text(msg)}, arr{}, false)
		} else {
			c.result = g.ok(weather, msg)
		}
		return c
	}
	ds := forecastDays(ct, g.t, days)
	if g.client.stateless {
		c.result = g.result(weather, arr{text(forecastText(ct, ds))}, forecastStructured(ds), false)
	} else {
		c.result = g.ok(weather, forecastText(ct, ds))
	}
	return c
}

func (g *session) randomForecast() call {
	return g.forecast(pick(g.rng, cities).name, pick(g.rng, []int{1, 3, 3, 5, 7}))
}

// github.search_issues.
func (g *session) searchIssues(repo, query, state string) call {
	return call{srv: github, tool: "search_issues", args: obj{{"repo", repo}, {"query", query}, {"state", state}},
		dur: g.ms(300, 1800), result: g.ok(github, issuesText(repo, query, state, g.t))}
}

func (g *session) repo() string { return g.tenant + "/" + pick(g.rng, repoNames) }

func (g *session) randomIssues() call {
	return g.searchIssues(g.repo(), pick(g.rng, issueTopics).query, pick(g.rng, issueStates))
}

// unrelated records a successful call of some tool other than tool, made
// while a retry of tool is pending. It repeats no call of the last minute,
// so it cannot pass for a retry.
func (g *session) unrelated(srv *server, tool string) {
	for {
		var c call
		switch g.rng.IntN(4) {
		case 0:
			c = g.randomForecast()
		case 1:
			c = g.getDoc(pick(g.rng, docs))
		case 2:
			c = g.randomIssues()
		default:
			c = g.lookupCustomer(pick(g.rng, customers))
		}
		if c.srv == srv && c.tool == tool || g.recent(c) {
			continue
		}
		g.do(StorySuccess, c)
		return
	}
}
