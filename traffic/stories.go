package traffic

import (
	"fmt"
	"time"
)

// One method per story. Each records the calls of one episode at g.t and
// leaves g.t after the last response. Retries keep the arguments unchanged
// and start 1-20 s after the failure; corrections come after the model has
// thought (think).

// success is a small group of related successful calls.
func (g *session) success() {
	const s = StorySuccess
	switch g.rng.IntN(9) {
	case 0, 1:
		c, dq := g.randomSearch()
		g.do(s, c)
		if chance(g.rng, 70) {
			g.think()
			d, _ := docByID(dq.hits[0])
			g.do(s, g.getDoc(d))
		}
	case 2:
		g.do(s, g.getDoc(pick(g.rng, docs)))
	case 3:
		c := pick(g.rng, customers)
		g.do(s, g.lookupCustomer(c))
		if len(c.tickets) > 0 && chance(g.rng, 60) {
			g.think()
			g.do(s, g.updateTicket(pick(g.rng, c.tickets), pick(g.rng, ticketStatuses), pick(g.rng, ticketNotes)))
		}
	case 4:
		id := g.invoiceID()
		g.do(s, g.getInvoice(id))
		if chance(g.rng, 25) {
			g.think()
			amount, cur := g.refundArgs(id)
			g.do(s, g.refund(id, amount, cur))
		}
	case 5:
		g.do(s, g.randomForecast())
		if chance(g.rng, 30) {
			g.think()
			c := g.randomForecast()
			for g.recent(c) {
				c = g.randomForecast()
			}
			g.do(s, c)
		}
	case 6:
		g.do(s, g.randomIssues())
	case 7:
		g.do(s, g.lookupCustomer(pick(g.rng, customers)))
		g.think()
		g.do(s, g.getInvoice(g.invoiceID()))
	default:
		// A valid query that truly matches nothing: the honest empty result
		// that misspelled_enum's empty results hide among.
		dq := pick(g.rng, emptyQueries)
		g.do(s, g.searchDocs(dq.dept, dq.q, g.limit()))
	}
}

// repeatAfterPause calls the same tool with the same arguments again more
// than a minute later: a status check, not a retry.
func (g *session) repeatAfterPause() {
	var mk func() call
	switch g.rng.IntN(4) {
	case 0:
		name, days := pick(g.rng, cities).name, pick(g.rng, []int{1, 3})
		mk = func() call { return g.forecast(name, days) }
	case 1:
		id := g.invoiceID()
		mk = func() call { return g.getInvoice(id) }
	case 2:
		repo, q, st := g.repo(), pick(g.rng, issueTopics).query, "open"
		mk = func() call { return g.searchIssues(repo, q, st) }
	default:
		c := pick(g.rng, customers)
		mk = func() call { return g.lookupCustomer(c) }
	}
	g.do(StoryRepeatAfterPause, mk())
	g.t = g.t.Add(g.between(61*time.Second, 10*time.Minute))
	g.do(StoryRepeatAfterPause, mk())
}

// misspelledEnum: an argument value that matches nothing gets an empty
// result with isError false. The model corrects it, repeats it, or gives up.
func (g *session) misspelledEnum() {
	const s = StoryMisspelledEnum
	switch n := g.rng.IntN(100); {
	case n < 60:
		m := pick(g.rng, misspelledDepartments)
		qs := queriesOf(m.good)
		dq, limit := pick(g.rng, qs), g.limit()
		g.do(s, g.searchDocs(m.bad, dq.q, limit))
		switch k := g.rng.IntN(100); {
		case k < 50:
			g.think()
			g.do(s, g.searchDocs(m.good, dq.q, limit))
			if chance(g.rng, 40) {
				g.think()
				d, _ := docByID(dq.hits[0])
				g.do(s, g.getDoc(d))
			}
		case k < 70:
			g.think()
			g.do(s, g.searchDocs(m.bad, pick(g.rng, qs).q, limit))
		}
	case n < 85:
		u, days := pick(g.rng, unknownCities), pick(g.rng, []int{1, 3, 5})
		g.do(s, g.forecast(u.bad, days))
		switch {
		case u.good != "" && chance(g.rng, 55):
			g.think()
			g.do(s, g.forecast(u.good, days))
		case u.good == "" && chance(g.rng, 30):
			g.think()
			g.do(s, g.forecast(u.bad, days).again())
		}
	default:
		m, repo, q := pick(g.rng, misspelledStates), g.repo(), pick(g.rng, issueTopics).query
		g.do(s, g.searchIssues(repo, q, m.bad))
		if chance(g.rng, 60) {
			g.think()
			g.do(s, g.searchIssues(repo, q, m.good))
		}
	}
}

// poolExhausted: isError true, retried unchanged until the client gives up;
// all attempts fail and the last one sometimes gets no answer at all.
func (g *session) poolExhausted() {
	var c call
	var msg string
	switch g.rng.IntN(3) {
	case 0:
		c, _ = g.randomSearch()
		msg = pick(g.rng, []string{
			"数据库连接池耗尽: too many connections",
			"Error executing tool search_docs: (psycopg.OperationalError) connection pool exhausted (max=50)",
		})
	case 1:
		c = g.getDoc(pick(g.rng, docs))
		msg = "数据库连接池耗尽: too many connections"
	default:
		c = g.lookupCustomer(pick(g.rng, customers))
		msg = pick(g.rng, []string{
			"connection pool exhausted (max=50)",
			"pq: sorry, too many clients already",
		})
	}
	slow := chance(g.rng, 50) // waits out the 5 s pool acquire timeout
	attempts := 3 + g.rng.IntN(2)
	lastNoAnswer := chance(g.rng, 35)
	for i := 0; i < attempts; i++ {
		if i > 0 {
			g.retryWait(g.retryGap(i-1), c.srv, c.tool)
			c.repeat = true
		}
		c.result, c.dur = g.toolError(c.srv, msg, nil), g.ms(15, 90)
		if slow {
			c.dur = g.ms(5000, 5080)
		}
		if i == attempts-1 && lastNoAnswer {
			c.result = nil
		}
		g.do(StoryPoolExhausted, c)
		if i == 0 && g.givesUp() {
			return
		}
	}
}

// rateLimited: one or two 429s, a wait of 2-10 s (the server's retryAfterMs
// when it sent one), then success. A client that gives up (habits.giveUp)
// stops after the first 429; one that retries early (habits.early) retries
// once more before the hint has passed, refused again.
func (g *session) rateLimited() {
	var ok call
	var msg string
	retryAfter := 0
	switch g.rng.IntN(4) {
	case 0:
		ok = g.randomIssues()
		retryAfter = pick(g.rng, []int{2000, 3000, 5000})
		msg = fmt.Sprintf("429 Too Many Requests: secondary rate limit exceeded, retry after %ds", retryAfter/1000)
	case 1:
		ok = g.randomForecast()
		msg = "429 Too Many Requests"
	case 2:
		ok, _ = g.randomSearch()
		msg = "请求过于频繁，请稍后再试"
	default:
		ok = g.lookupCustomer(pick(g.rng, customers))
		retryAfter = 5000
		msg = "rate limit exceeded (100 requests/min): 429 Too Many Requests"
	}
	var sc obj
	if retryAfter > 0 {
		sc = obj{{"errorCode", "RATE_LIMITED"}, {"retryable", true}, {"retryAfterMs", retryAfter}}
	}
	fails := 1 + g.rng.IntN(4)/3
	early := g.client.habits.early && retryAfter > 0
	if early {
		fails++
		if g.runsAway() {
			fails += 20 + g.rng.IntN(10)
		}
	}
	for i := 0; i < fails; i++ {
		if i > 0 {
			wait := g.rateWait(retryAfter)
			if early {
				wait = g.ms(1000, 1500)
			}
			g.retryWait(wait, ok.srv, ok.tool)
		}
		c := ok
		c.result, c.dur, c.repeat = g.toolError(ok.srv, msg, sc), g.ms(10, 60), i > 0
		g.do(StoryRateLimited, c)
		if i == 0 && g.givesUp() {
			return
		}
	}
	g.retryWait(g.rateWait(retryAfter), ok.srv, ok.tool)
	g.do(StoryRateLimited, g.redo(ok).again())
}

func (g *session) rateWait(retryAfterMs int) time.Duration {
	if retryAfterMs > 0 {
		d := time.Duration(retryAfterMs) * time.Millisecond
		return d + g.ms(100, 1500)
	}
	return g.ms(2000, 10000)
}

// redo rebuilds a successful call at the current time (results carry dates
// relative to the request).
func (g *session) redo(c call) call {
	switch c.tool {
	case "search_docs":
		lim := 0
		if v, ok := c.args.get("limit").(int); ok {
			lim = v
		}
		return g.searchDocs(c.args.get("department").(string), c.args.get("q").(string), lim)
	case "get_doc":
		d, _ := docByID(c.args.get("doc_id").(string))
		return g.getDoc(d)
	case "lookup_customer":
		for _, cu := range customers {
			if cu.id == c.args.get("customer_id") {
				return g.lookupCustomer(cu)
			}
		}
	case "get_invoice":
		return g.getInvoice(c.args.get("invoice_id").(string))
	case "get_forecast":
		return g.forecast(c.args.get("city").(string), c.args.get("days").(int))
	case "search_issues":
		return g.searchIssues(c.args.get("repo").(string), c.args.get("query").(string), c.args.get("state").(string))
	}
	c.dur = g.ms(50, 300)
	return c
}

// expiredToken: 401 every time, sometimes with a structured error that
// wrongly declares it retryable; a client that retries everything
// (habits.retryAll) retries unchanged 2-4 times, the others at most once.
func (g *session) expiredToken() {
	var c call
	msg := "401 Unauthorized: token expired"
	switch g.rng.IntN(5) {
	case 0:
		c = g.updateTicket(g.randomTicket(), pick(g.rng, ticketStatuses), pick(g.rng, ticketNotes))
	case 1:
		c = g.lookupCustomer(pick(g.rng, customers))
	case 2:
		c = g.getInvoice(g.invoiceID())
		msg = "令牌过期，请重新登录"
	case 3:
		c = g.randomIssues()
	default:
		c = g.getDoc(pick(g.rng, docs))
		msg = "令牌过期，请重新登录"
	}
	var sc obj
	if chance(g.rng, 40) {
		sc = obj{{"errorCode", "UNAUTHENTICATED"}, {"retryable", true}}
	}
	attempts := 1 + g.rng.IntN(2)
	if g.client.habits.retryAll > 0 {
		attempts += 2
	}
	for i := 0; i < attempts; i++ {
		if i > 0 {
			g.retryWait(g.retryGap(i-1), c.srv, c.tool)
			c.repeat = true
		}
		c.result, c.dur = g.toolError(c.srv, msg, sc), g.ms(25, 140)
		g.do(StoryExpiredToken, c)
	}
}

// invalidParams: arguments the server rejects with -32602 or an "Input
// validation error", then corrected arguments that succeed.
func (g *session) invalidParams() {
	const s = StoryInvalidParams
	// SEP-1303: from 2025-11-25 on, input validation errors are tool
	// execution errors, so newer clients get isError results.
	toolErr := g.client.protocol >= "2025-11-25"
	switch g.rng.IntN(4) {
	case 0:
		name := pick(g.rng, cities).name
		const msg = "Invalid arguments for tool get_forecast: days must be between 1 and 14"
		bad := []int{pick(g.rng, []int{30, 21, 0})}
		if chance(g.rng, 25) {
			bad = append(bad, 15)
		}
		for _, days := range bad {
			c := g.forecast(name, days)
			c.dur = g.ms(2, 15)
			if toolErr {
				c.result = g.toolError(weather, "Input validation error: "+msg, nil)
			} else {
				var data any
				if chance(g.rng, 50) {
					data = obj{{"field", "days"}, {"minimum", 1}, {"maximum", 14}, {"received", days}}
				}
				c.result, c.rpcErr = nil, rpcError(-32602, msg, data)
			}
			g.badInput(c)
			g.think()
		}
		g.do(s, g.forecast(name, pick(g.rng, []int{14, 7})))
	case 1:
		id, note := g.randomTicket(), pick(g.rng, ticketNotes)
		bad := pick(g.rng, []string{"done", "closed_won", "Resolved"})
		c := g.updateTicket(id, bad, note)
		c.dur = g.ms(1, 8)
		c.result = g.toolError(crm, fmt.Sprintf(`validating "arguments": validating root: validating /properties/status: `+
			`enum: %q does not equal any of: [open pending resolved closed]`, bad), nil)
		g.badInput(c)
		g.think()
		g.do(s, g.updateTicket(id, "resolved", note))
	case 2:
		id := g.invoiceID()
		amount, cur := g.refundArgs(id)
		bad := map[string]string{"CNY": "RMB", "USD": "US$", "EUR": "euro"}[cur]
		c := g.refund(id, amount, bad)
		c.dur = g.ms(1, 10)
		c.result, c.rpcErr = nil, rpcError(-32602, "Invalid arguments for tool refund: currency must be one of CNY, EUR, USD", nil)
		g.badInput(c)
		g.think()
		g.do(s, g.refund(id, amount, cur))
	default:
		dq := pick(g.rng, docQueries)
		c := g.searchDocs(dq.dept, dq.q, 500)
		c.dur = g.ms(2, 12)
		c.result = g.toolError(kb, "Input validation error: 500 is greater than the maximum of 50", nil)
		g.badInput(c)
		g.think()
		g.do(s, g.searchDocs(dq.dept, dq.q, 20))
	}
}

// badInput records c, an invalid_params failure, and the client's unchanged
// re-send of it 1-2 s later when its habits say so (habits.retryAll).
func (g *session) badInput(c call) {
	g.do(StoryInvalidParams, c)
	if g.resends() {
		g.retryWait(g.retryGap(0), c.srv, c.tool)
		g.do(StoryInvalidParams, c.again())
	}
}

// unknownTool: a hallucinated tool name, answered in the shape of the
// server's SDK. The model then uses the real tool, repeats itself, or gives up.
func (g *session) unknownTool() {
	const s = StoryUnknownTool
	var right call
	var bad call
	switch g.rng.IntN(5) {
	case 0:
		var dq docQuery
		right, dq = g.randomSearch()
		bad = call{srv: kb, tool: pick(g.rng, []string{"search_document", "search_documents", "kb_search"}),
			args: obj{{"query", dq.q}, {"department", dq.dept}}}
	case 1:
		cu := pick(g.rng, customers)
		right = g.lookupCustomer(cu)
		bad = call{srv: crm, tool: pick(g.rng, []string{"find_customer", "get_customer"}), args: obj{{"name", cu.name}}}
	case 2:
		id := g.invoiceID()
		right = g.getInvoice(id)
		bad = call{srv: payments, tool: pick(g.rng, []string{"get_invoices", "fetch_invoice"}), args: obj{{"id", id}}}
	case 3:
		right = g.randomForecast()
		bad = call{srv: weather, tool: pick(g.rng, []string{"get_weather", "weather_forecast"}),
			args: obj{{"location", right.args.get("city")}}}
	default:
		right = g.randomIssues()
		bad = call{srv: github, tool: pick(g.rng, []string{"list_issues", "search_issue"}),
			args: obj{{"repo", right.args.get("repo")}, {"q", right.args.get("query")}}}
	}
	switch bad.srv.sdk {
	case sdkPython:
		bad.rpcErr = rpcError(-32602, "Unknown tool: "+bad.tool, nil)
	case sdkGo:
		bad.rpcErr = rpcError(-32602, fmt.Sprintf("unknown tool %q", bad.tool), nil)
	case sdkMCPGo:
		bad.rpcErr = rpcError(-32602, fmt.Sprintf("tool '%s' not found: tool not found", bad.tool), nil)
	case sdkTSv2:
		bad.rpcErr = rpcError(-32602, fmt.Sprintf("Tool %s not found", bad.tool), nil)
	case sdkTSv1:
		bad.result = g.toolError(bad.srv, fmt.Sprintf("MCP error -32602: Tool %s not found", bad.tool), nil)
	}
	bad.dur = g.ms(1, 6)
	g.do(s, bad)
	switch n := g.rng.IntN(100); {
	case n < 15: // the same wrong name again, then maybe the right one
		g.think()
		g.do(s, bad.again())
		if chance(g.rng, 50) {
			g.think()
			g.do(s, g.redo(right))
		}
	case n < 35: // gives up
	default:
		g.think()
		g.do(s, g.redo(right))
	}
}

// upstreamTimeout: isError "upstream timed out after 30s"; half are retried
// successfully, some retried in vain, the rest not retried. A client whose
// own timeout is 30 s sees no answer instead.
func (g *session) upstreamTimeout() {
	var ok call
	msg := "upstream timed out after 30s"
	wait := g.ms(30000, 30200)
	switch g.rng.IntN(4) {
	case 0:
		ok = g.randomForecast()
	case 1:
		ok = g.randomIssues()
		msg = "upstream timed out after 30s: GET https://api.github.com/search/issues"
	case 2:
		ok, _ = g.randomSearch()
		msg = "上游服务超时：向量检索服务 10 秒内无响应"
		wait = g.ms(10000, 10100)
	default:
		ok = g.getInvoice(g.invoiceID())
	}
	var sc obj
	if chance(g.rng, 30) {
		sc = obj{{"errorCode", "UPSTREAM_TIMEOUT"}, {"retryable", true}}
	}
	fail := func(repeat bool) {
		c := ok
		c.result, c.dur, c.repeat = g.toolError(ok.srv, msg, sc), wait, repeat
		g.do(StoryUpstreamTimeout, c)
	}
	fail(false)
	if g.givesUp() {
		return
	}
	switch n := g.rng.IntN(100); {
	case n < 50:
		g.retryWait(g.ms(1000, 8000), ok.srv, ok.tool)
		g.do(StoryUpstreamTimeout, g.redo(ok).again())
	case n < 70:
		g.retryWait(g.ms(1000, 8000), ok.srv, ok.tool)
		fail(true)
	}
}

// hiddenFailure: the tool failed but said isError false (or nothing): a
// traceback in the text, or structuredContent {"error":true}.
func (g *session) hiddenFailure() {
	const s = StoryHiddenFailure
	var c call
	transient := true
	switch g.rng.IntN(4) {
	case 0:
		c, _ = g.randomSearch()
		transient = false
		c.result = g.ok(kb, "Error: Traceback (most recent call last):\n"+
			"  File \"/srv/kb/server.py\", line 142, in search_docs\n"+
			"    rows = await pool.fetch(SEARCH_SQL, department, q, limit)\n"+
			"  File \"/srv/kb/.venv/lib/python3.12/site-packages/asyncpg/pool.py\", line 1063, in fetch\n"+
			"    return await con.fetch(query, *args, timeout=timeout)\n"+
			"  File \"/srv/kb/.venv/lib/python3.12/site-packages/asyncpg/connection.py\", line 690, in fetch\n"+
			"    return await self._execute(query, args, 0, timeout)\n"+
			"asyncpg.exceptions.UndefinedColumnError: column \"dept_code\" does not exist")
	case 1:
		c = g.lookupCustomer(pick(g.rng, customers))
		sc := obj{{"error", true}, {"message", "upstream CRM returned HTTP 502 Bad Gateway"}}
		c.result = g.result(crm, arr{text(jsonText(sc))}, sc, false)
	case 2:
		c = g.getInvoice(g.invoiceID())
		sc := obj{{"error", true}, {"message", "ledger service unavailable: dial tcp 10.0.3.17:5432: connect: connection refused"}}
		c.result = g.result(payments, arr{text(jsonText(sc))}, sc, false)
	default:
		c = g.randomIssues()
		c.result = g.ok(github, "Error: Request failed with status code 500")
	}
	g.do(s, c)
	if chance(g.rng, 35) {
		g.think()
		if transient {
			c = g.redo(c)
		}
		g.do(s, c.again())
	}
}

// internalError: mcp-go turns every handler error into JSON-RPC -32603.
func (g *session) internalError() {
	const s = StoryInternalError
	id := g.invoiceID()
	ok := g.getInvoice(id)
	if chance(g.rng, 40) {
		amount, cur := g.refundArgs(id)
		ok = g.refund(id, amount, cur)
	}
	msg := pick(g.rng, []string{
		"internal error: nil pointer dereference",
		"internal error: runtime error: invalid memory address or nil pointer dereference",
		"internal error: runtime error: index out of range [1] with length 1",
	})
	c := ok
	c.result, c.rpcErr, c.dur = nil, rpcError(-32603, msg, nil), g.ms(5, 80)
	g.do(s, c)
	switch n := g.rng.IntN(100); {
	case n < 40:
		g.retryWait(g.ms(1000, 8000), c.srv, c.tool)
		g.do(s, c.again())
	case n < 65:
		g.retryWait(g.ms(1000, 8000), c.srv, c.tool)
		if ok.tool == "refund" {
			amount, cur := ok.args.get("amount").(float64), ok.args.get("currency").(string)
			g.do(s, g.refund(id, amount, cur).again())
		} else {
			g.do(s, g.redo(ok).again())
		}
	}
}

// inputRequired (2026-07-28 only): the server answers input_required; the
// client comes back with a new id, the same name and arguments, the echoed
// requestState and, when asked, inputResponses.
func (g *session) inputRequired() {
	const s = StoryInputRequired
	switch g.rng.IntN(3) {
	case 0:
		id := g.invoiceID()
		amount, cur := g.refundArgs(id)
		done := g.refund(id, amount, cur)
		st := g.requestState("refund", 1)
		first := done
		first.dur = g.ms(30, 120)
		first.result = obj{
			{"resultType", "input_required"},
			{"inputRequests", obj{{"confirm_refund", obj{
				{"method", "elicitation/create"},
				{"params", obj{
					{"message", fmt.Sprintf("确认向发票 %s 退款 %.2f %s？此操作不可撤销。", id, amount, cur)},
					{"requestedSchema", obj{
						{"type", "object"},
						{"properties", obj{{"confirm", obj{{"type", "boolean"}, {"title", "确认退款"}}}}},
						{"required", []string{"confirm"}},
					}},
				}},
			}}}},
			{"requestState", st},
		}
		g.do(s, first)
		g.t = g.t.Add(g.between(4*time.Second, 25*time.Second)) // the user answers
		decline := chance(g.rng, 15)
		resp := obj{{"action", "accept"}, {"content", obj{{"confirm", true}}}}
		if decline {
			resp = obj{{"action", "decline"}}
			done.result = g.ok(payments, "Refund cancelled: the user declined the confirmation. No money was moved.")
		}
		done.extra = obj{{"inputResponses", obj{{"confirm_refund", resp}}}, {"requestState", st}}
		g.do(s, done.again())
	case 1:
		d := pick(g.rng, docs)
		done := g.getDoc(d)
		st := g.requestState("get_doc", 1)
		first := done
		first.dur = g.ms(20, 90)
		first.result = obj{{"resultType", "input_required"}, {"requestState", st}}
		g.do(s, first)
		g.t = g.t.Add(g.between(1*time.Second, 6*time.Second))
		done.extra = obj{{"requestState", st}}
		g.do(s, done.again())
	default:
		q, state := pick(g.rng, issueTopics).query, pick(g.rng, issueStates)
		repos := make([]string, len(repoNames))
		for i, r := range repoNames {
			repos[i] = g.tenant + "/" + r
		}
		pickRepo := obj{{"method", "elicitation/create"}, {"params", obj{
			{"message", "Which repository should I search?"},
			{"requestedSchema", obj{
				{"type", "object"},
				{"properties", obj{{"repo", obj{{"type", "string"}, {"enum", repos}}}}},
				{"required", []string{"repo"}},
			}},
		}}}
		args := obj{{"repo", g.tenant + "/*"}, {"query", q}, {"state", state}}
		st := g.requestState("search_issues", 1)
		g.do(s, call{srv: github, tool: "search_issues", args: args, dur: g.ms(40, 150),
			result: obj{{"resultType", "input_required"}, {"inputRequests", obj{{"pick_repo", pickRepo}}}, {"requestState", st}}})
		g.t = g.t.Add(g.between(3*time.Second, 20*time.Second))
		repo := pick(g.rng, repos)
		extra := obj{{"inputResponses", obj{{"pick_repo", obj{{"action", "accept"}, {"content", obj{{"repo", repo}}}}}}},
			{"requestState", st}}
		if chance(g.rng, 35) {
			// The server may ask again: here it needs another round to
			// finish indexing and hands back a new state.
			st2 := g.requestState("search_issues", 2)
			g.do(s, call{srv: github, tool: "search_issues", args: args, extra: extra, dur: g.ms(200, 900),
				result: obj{{"resultType", "input_required"}, {"requestState", st2}}, repeat: true})
			g.t = g.t.Add(g.between(1*time.Second, 4*time.Second))
			extra = obj{{"requestState", st2}}
		}
		done := g.searchIssues(repo, q, state)
		done.args, done.extra = args, extra
		g.do(s, done.again())
	}
}

// permissionDenied: 403 / 无权限; occasionally retried once in vain.
func (g *session) permissionDenied() {
	var c call
	switch g.rng.IntN(3) {
	case 0:
		repo := g.tenant + "/" + pick(g.rng, privateRepos)
		c = g.searchIssues(repo, pick(g.rng, issueTopics).query, "open")
		var sc obj
		if chance(g.rng, 40) {
			sc = obj{{"errorCode", "PERMISSION_DENIED"}, {"retryable", false}}
		}
		c.result = g.toolError(github, "403 Forbidden: no access to repo "+repo, sc)
	case 1:
		id := pick(g.rng, restrictedDocs)
		c = call{srv: kb, tool: "get_doc", args: obj{{"doc_id", id}}, dur: g.ms(20, 90)}
		c.result = g.toolError(kb, pick(g.rng, []string{"无权限访问该文档", "无权限访问该文档：" + id + " 仅限 exec-staff 组成员查看"}), nil)
	default:
		c = g.updateTicket(g.randomTicket(), pick(g.rng, ticketStatuses), pick(g.rng, ticketNotes))
		c.result = g.toolError(crm, `permission denied: role "viewer" cannot update tickets`, nil)
	}
	c.dur = g.ms(20, 150)
	g.do(StoryPermissionDenied, c)
	if chance(g.rng, 20) {
		g.retryWait(g.ms(1000, 6000), c.srv, c.tool)
		g.do(StoryPermissionDenied, c.again())
	}
}

// notFound: an id that does not exist. Older kb sessions get the MCP
// resource-not-found code -32002, which 2026-07-28 retired.
func (g *session) notFound() {
	const s = StoryNotFound
	switch g.rng.IntN(3) {
	case 0:
		id := pick(g.rng, missingDocs)
		c := call{srv: kb, tool: "get_doc", args: obj{{"doc_id", id}}, dur: g.ms(10, 60)}
		if !g.client.stateless && chance(g.rng, 50) {
			c.rpcErr = rpcError(-32002, "Resource not found", obj{{"uri", "kb://docs/" + id}})
		} else {
			c.result = g.toolError(kb, "document "+id+" not found", nil)
		}
		g.do(s, c)
		if chance(g.rng, 40) {
			g.think()
			c, _ := g.randomSearch()
			g.do(s, c)
		}
	case 1:
		id := pick(g.rng, missingCustomers)
		g.do(s, call{srv: crm, tool: "lookup_customer", args: obj{{"customer_id", id}}, dur: g.ms(15, 80),
			result: g.toolError(crm, "customer "+id+" not found", nil)})
	default:
		id := pick(g.rng, missingInvoices)
		g.do(s, call{srv: payments, tool: "get_invoice", args: obj{{"invoice_id", id}}, dur: g.ms(15, 80),
			result: g.toolError(payments, "invoice "+id+" not found", nil)})
	}
}
