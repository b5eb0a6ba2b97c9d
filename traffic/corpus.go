package traffic

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The world the demo servers answer from. Values derived from it (invoice
// amounts, forecasts, issue lists) come from keyed, so the same arguments get
// the same answer in every session and every run.

// keyed returns a generator seeded from the key alone.
func keyed(parts ...string) *rand.Rand {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	s := h.Sum64()
	return rand.New(rand.NewPCG(s, splitmix(s)))
}

// isChinese reports whether s holds any non-ASCII text; results answer in
// the language of the query.
func isChinese(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return true
		}
	}
	return false
}

// Knowledge base.

type doc struct {
	id, dept, title, summary, updated string
	body                              string
}

var docs = []doc{
	{"D-1001", "finance", "差旅报销管理办法（2026 修订）",
		"国内出差住宿标准：一线城市每晚不超过 600 元，其他城市 450 元；超标部分需部门负责人审批。", "2026-03-01",
		"第一条 适用范围：本办法适用于公司全体正式员工及实习生因公出差产生的交通、住宿、餐补费用。\n" +
			"第二条 住宿标准：北京、上海、广州、深圳每晚不超过 600 元；省会城市每晚不超过 450 元；其他城市每晚不超过 350 元。\n" +
			"第三条 交通标准：高铁二等座、飞机经济舱；单程 4 小时以上的航班经审批可升舱。\n" +
			"第四条 餐补：每日 100 元，包干使用，无需发票。\n" +
			"第五条 报销时限：出差结束后 30 日内在费控系统提交，逾期需财务总监审批。\n" +
			"第六条 单次报销上限为 20000 元，超过部分需拆分审批并附情况说明。"},
	{"D-1002", "finance", "Travel & Expense Reimbursement Policy",
		"Hotel caps per night, per-diem rates and the 30-day submission deadline for business travel.", "2026-02-14",
		"Scope: all employees and contractors travelling on company business.\n" +
			"Lodging: up to USD 250 per night in tier-1 cities (New York, London, Tokyo, Singapore), USD 180 elsewhere. " +
			"Exceptions require written approval from your department head before booking.\n" +
			"Per diem: USD 75 per day for meals, paid without receipts.\n" +
			"Air travel: economy class; premium economy for flights longer than 6 hours.\n" +
			"Submission: file expenses in the expense tool within 30 days of returning. Late claims need CFO approval.\n" +
			"Single-claim limit: USD 3,000; split larger claims and attach a justification."},
	{"D-1003", "finance", "增值税发票开具与报销流程",
		"专票与普票的开具要求、抬头与税号核对，以及费控系统中的发票查验步骤。", "2026-01-20",
		"一、发票抬头必须为公司全称，税号须与开票信息一致，否则无法报销。\n" +
			"二、增值税专用发票需在开具后 360 日内完成认证抵扣。\n" +
			"三、电子发票请上传 PDF 或 OFD 原件，截图无效；同一张发票系统会自动查重。\n" +
			"四、报销流程：提交申请 → 直属上级审批 → 财务初审 → 出纳付款，正常周期 5 个工作日。"},
	{"D-2001", "engineering", "On-call Runbook: Payments API",
		"Triage steps for payments-api alerts: connection pool saturation, PSP timeouts and elevated 5xx.", "2026-10-02",
		"1. Check the payments-api dashboard: p99 latency, 5xx rate, DB pool in-use vs max (max=50).\n" +
			"2. Pool saturated: look for long transactions (pg_stat_activity), then scale replicas; do not raise max above 120.\n" +
			"3. PSP timeouts: the upstream timeout is 30s. Check the PSP status page before paging the vendor.\n" +
			"4. Elevated 401s after a deploy usually mean a rotated client secret; roll back the secret, not the code.\n" +
			"5. Escalate to #payments-oncall after 15 minutes without mitigation."},
	{"D-2002", "engineering", "代码评审规范 v4",
		"每个 PR 至少一名代码所有者批准；涉及数据库迁移的变更需要 DBA 评审。", "2026-06-11",
		"1. 每个 PR 不超过 400 行有效改动，超出请拆分。\n" +
			"2. 至少一名 CODEOWNERS 成员批准后方可合并；涉及数据库迁移、鉴权、计费逻辑的改动需两名评审人。\n" +
			"3. 评审意见分为 blocking 与 nit 两级，nit 不阻塞合并。\n" +
			"4. CI 必须全绿；不允许跳过测试合并，紧急修复需在 24 小时内补测试。"},
	{"D-2003", "engineering", "Database Connection Pool Sizing Guide",
		"How to size connection pools per service and what 'too many connections' means in production.", "2026-08-19",
		"Each service instance gets a pool of at most 50 connections; the database accepts 500 in total.\n" +
			"Symptoms of exhaustion: 'connection pool exhausted (max=50)', 'too many connections', request latency " +
			"equal to the pool acquire timeout (5s).\n" +
			"Retrying immediately makes exhaustion worse: callers should back off with jitter and cap attempts at 3.\n" +
			"Prefer fixing long-held connections over raising limits."},
	{"D-3001", "hr", "年假与调休制度",
		"入职满 1 年享 5 天年假，满 10 年 10 天，满 20 年 15 天；调休须在 3 个月内使用。", "2026-01-05",
		"一、年假天数：累计工作满 1 年不满 10 年的 5 天；满 10 年不满 20 年的 10 天；满 20 年的 15 天。\n" +
			"二、年假可分次休，每次不少于半天，当年未休可顺延至次年 3 月 31 日。\n" +
			"三、加班调休：工作日加班按 1:1 调休，须在 3 个月内使用，过期作废。\n" +
			"四、请假需提前 3 个工作日在 HR 系统提交。"},
	{"D-3002", "hr", "Parental Leave Policy",
		"16 weeks fully paid for the primary caregiver, 6 weeks for the secondary caregiver.", "2025-12-01",
		"Primary caregivers receive 16 weeks of fully paid leave; secondary caregivers receive 6 weeks.\n" +
			"Leave can start up to 4 weeks before the expected birth or placement date and must be taken within 12 months.\n" +
			"Notify HR at least 8 weeks in advance. A phased return (60% schedule for 4 weeks) is available on request."},
	{"D-4001", "sales", "Discount Approval Matrix FY2027",
		"Who approves which discount: up to 10% AE, 10-20% sales manager, above 20% VP Sales and finance.", "2026-09-30",
		"Up to 10%: account executive, no approval needed.\n10-20%: sales manager approval in CRM.\n" +
			"20-35%: VP Sales plus finance business partner.\nAbove 35%: CFO; attach the competitive situation and a 3-year margin model.\n" +
			"Multi-year prepay discounts stack with volume discounts up to a combined 40%."},
	{"D-4002", "sales", "渠道合作伙伴返点政策",
		"金牌伙伴返点 15%，银牌 10%，注册伙伴 5%；季度结算，需提交最终用户信息。", "2026-04-18",
		"一、返点比例：金牌伙伴 15%，银牌伙伴 10%，注册伙伴 5%。\n" +
			"二、结算周期：按季度结算，季度结束后 45 日内付款。\n" +
			"三、返点前提：项目须在 CRM 中报备，并提交最终用户名称与合同编号。\n" +
			"四、同一项目多家伙伴报备时，以最先报备且有效推进者为准。"},
	{"D-5001", "legal", "数据出境合规指引",
		"个人信息出境前需完成安全评估或签订标准合同，并进行个人信息保护影响评估。", "2026-05-09",
		"一、向境外提供个人信息前，须完成个人信息保护影响评估（PIA）。\n" +
			"二、累计向境外提供 10 万人以上个人信息的，须申报数据出境安全评估。\n" +
			"三、其他情形可通过签订标准合同并备案的方式出境。\n" +
			"四、日志、客服工单中的手机号、身份证号须脱敏后方可跨境传输。"},
	{"D-5002", "legal", "NDA Template Usage Guidelines",
		"When to use the mutual vs one-way NDA template and which clauses sales may not change.", "2026-07-22",
		"Use the mutual NDA for partnerships and the one-way NDA for vendor evaluations.\n" +
			"Sales may fill in party names, effective date and purpose only. Changes to term (3 years), governing law " +
			"or the residuals clause go to legal@ with 5 business days of lead time."},
	{"D-6001", "it", "VPN 与多因素认证配置指南",
		"安装 VPN 客户端、绑定 TOTP 或硬件密钥，以及常见的登录失败排查。", "2026-10-15",
		"1. 从软件中心安装 VPN 客户端，服务器地址 vpn.corp.example。\n" +
			"2. 首次登录需绑定多因素认证：支持 TOTP 应用或 FIDO2 硬件密钥。\n" +
			"3. 提示“令牌过期”时请重新登录 SSO，而不是反复重试连接。\n" +
			"4. 连续 5 次失败账号会锁定 30 分钟，可在自助门户解锁。"},
	{"D-6002", "it", "Laptop Refresh Policy",
		"Laptops are refreshed every 36 months; engineers may request a 32 GB model.", "2026-03-28",
		"Standard refresh cycle is 36 months. Engineering and data roles may request 32 GB RAM models.\n" +
			"Return the old device within 14 days of receiving the new one; data is wiped by IT.\n" +
			"Lost or stolen devices must be reported within 24 hours to security@."},
}

// restrictedDocs exist but need a role the caller does not have.
var restrictedDocs = []string{"D-7001", "D-7002", "D-7310"}

// missingDocs do not exist.
var missingDocs = []string{"D-999", "D-9999", "D-0404"}

func docByID(id string) (doc, bool) {
	for _, d := range docs {
		if d.id == id {
			return d, true
		}
	}
	return doc{}, false
}

// docQuery is a query that finds docs (in relevance order) in dept.
type docQuery struct {
	dept, q string
	hits    []string
}

var docQueries = []docQuery{
	{"finance", "差旅报销上限", []string{"D-1001", "D-1002"}},
	{"finance", "travel expense limit", []string{"D-1002", "D-1001"}},
	{"finance", "发票报销流程", []string{"D-1003", "D-1001"}},
	{"finance", "hotel cap per night", []string{"D-1002"}},
	{"engineering", "payments on-call runbook", []string{"D-2001"}},
	{"engineering", "代码评审", []string{"D-2002"}},
	{"engineering", "connection pool size", []string{"D-2003", "D-2001"}},
	{"hr", "年假天数", []string{"D-3001"}},
	{"hr", "parental leave", []string{"D-3002"}},
	{"hr", "调休规则", []string{"D-3001"}},
	{"sales", "discount approval", []string{"D-4001"}},
	{"sales", "渠道返点", []string{"D-4002"}},
	{"legal", "数据出境", []string{"D-5001"}},
	{"legal", "NDA template", []string{"D-5002"}},
	{"it", "VPN 配置", []string{"D-6001"}},
	{"it", "laptop refresh", []string{"D-6002"}},
}

// emptyQueries are valid queries that truly match nothing.
var emptyQueries = []docQuery{
	{"finance", "火星基地差旅补贴", nil},
	{"legal", "yacht purchase approval", nil},
	{"hr", "宠物陪产假", nil},
	{"it", "fax machine setup", nil},
}

// misspelledDepartments are department values that match no department:
// search_docs answers every one of them with an empty result.
var misspelledDepartments = []struct{ bad, good string }{
	{"finace", "finance"},
	{"enginering", "engineering"},
	{"hr ", "hr"},
	{"salse", "sales"},
	{"Legal", "legal"},
}

func queriesOf(dept string) []docQuery {
	var qs []docQuery
	for _, q := range docQueries {
		if q.dept == dept {
			qs = append(qs, q)
		}
	}
	return qs
}

// searchHits returns the documents q finds in dept: its own hits first,
// then the department's other documents as weaker matches. Queries outside
// docQueries, and departments that do not exist, find nothing.
func searchHits(dept, q string) []string {
	var hits []string
	for _, dq := range docQueries {
		if dq.dept == dept && dq.q == q {
			hits = slices.Clone(dq.hits)
		}
	}
	if hits == nil {
		return nil
	}
	for _, d := range docs {
		if d.dept == dept && !slices.Contains(hits, d.id) {
			hits = append(hits, d.id)
		}
	}
	return hits
}

// searchText renders search_docs output for query q (hits may be empty).
func searchText(dept, q string, hits []string, limit int) string {
	zh := isChinese(q)
	if len(hits) > limit {
		hits = hits[:limit]
	}
	if len(hits) == 0 {
		if zh {
			return "未找到匹配文档"
		}
		return "No matching documents found"
	}
	var b strings.Builder
	r := keyed(dept, q)
	score := 0.97 - float64(r.IntN(8))/100
	if zh {
		fmt.Fprintf(&b, "找到 %d 篇相关文档（部门：%s）：\n", len(hits), dept)
	} else {
		fmt.Fprintf(&b, "Found %d documents in %s:\n", len(hits), dept)
	}
	for i, id := range hits {
		d, _ := docByID(id)
		if zh {
			fmt.Fprintf(&b, "\n%d. [%s] %s\n   摘要：%s\n   更新时间：%s · 相关度 %.2f\n", i+1, d.id, d.title, d.summary, d.updated, score)
		} else {
			fmt.Fprintf(&b, "\n%d. [%s] %s\n   Summary: %s\n   Updated %s · score %.2f\n", i+1, d.id, d.title, d.summary, d.updated, score)
		}
		score -= 0.07 + float64(r.IntN(10))/100
	}
	return b.String()
}

// docText renders get_doc output.
func docText(d doc) string {
	r := keyed(d.id)
	return fmt.Sprintf("# %s\n\ndoc_id: %s | department: %s | version: v%d | updated: %s\n\n%s",
		d.title, d.id, d.dept, 2+r.IntN(5), d.updated, d.body)
}

// CRM.

type customer struct {
	id, name, plan   string
	arr              int
	currency, owner  string
	region, health   string
	tickets          []string
	lastContactNotes string
}

var customers = []customer{
	{"C-10023", "上海星辰科技有限公司", "enterprise", 480000, "CNY", "王蕾", "华东", "at_risk",
		[]string{"T-48213", "T-48217"}, "续约谈判中，客户反馈报表导出超时，要求 12 月前给出修复计划。"},
	{"C-10458", "Northwind Traders", "pro", 36000, "USD", "Dana Kim", "us-west", "healthy",
		[]string{"T-48190"}, "QBR on 2026-11-12 went well; interested in SSO add-on."},
	{"C-11002", "深圳云帆物流", "business", 156000, "CNY", "陈晓东", "华南", "healthy",
		[]string{"T-48302"}, "已完成二期上线，客户希望增加 API 调用额度。"},
	{"C-11876", "Blue Harbor Clinics", "enterprise", 212000, "USD", "Marcus Lee", "us-east", "expanding",
		[]string{"T-48255", "T-48291"}, "Expansion to 4 new clinics approved; HIPAA BAA renewal pending with legal."},
	{"C-12040", "杭州青禾教育", "pro", 62000, "CNY", "刘婷", "华东", "churn_risk",
		[]string{"T-48330"}, "使用量连续两个月下降，客户成功经理已约访。"},
	{"C-12311", "Fjord Analytics AB", "business", 74000, "EUR", "Ingrid Berg", "eu-north", "healthy",
		nil, "Renewal signed for 2 years; asked about data residency in Stockholm."},
}

// missingCustomers do not exist.
var missingCustomers = []string{"C-00000", "C-99999"}

var ticketStatuses = []string{"open", "pending", "resolved", "closed"}

var ticketNotes = []string{
	"客户已提供发票抬头，等待财务确认后关闭。",
	"已复现导出超时问题，转交研发，预计下周发布修复。",
	"电话回访：客户确认问题已解决，同意关闭工单。",
	"Customer confirmed the SSO login works after the certificate rotation.",
	"Waiting on customer for HAR file; pinged twice, will follow up Monday.",
	"Escalated to tier 2: webhook deliveries failing with 502 since 09:40 UTC.",
}

func customerRecord(c customer, now time.Time) obj {
	r := keyed(c.id)
	tickets := c.tickets
	if tickets == nil {
		tickets = []string{}
	}
	return obj{
		{"customer_id", c.id},
		{"name", c.name},
		{"plan", c.plan},
		{"arr", obj{{"amount", c.arr}, {"currency", c.currency}}},
		{"owner", c.owner},
		{"region", c.region},
		{"health", c.health},
		{"seats", 20 + r.IntN(480)},
		{"open_tickets", tickets},
		{"last_contact", now.AddDate(0, 0, -1-r.IntN(20)).Format(time.DateOnly)},
		{"notes", c.lastContactNotes},
	}
}

func ticketText(id, status, note string, now time.Time) string {
	r := keyed(id)
	if isChinese(note) {
		return fmt.Sprintf("工单 %s 已更新：状态 → %s，已追加备注（共 %d 条）。SLA 剩余 %d 小时，更新时间 %s。",
			id, status, 2+r.IntN(6), 4+r.IntN(40), now.Format("2006-01-02 15:04"))
	}
	return fmt.Sprintf("Ticket %s updated: status → %s. Note added (%d notes total). SLA: %dh remaining. Updated at %s UTC.",
		id, status, 2+r.IntN(6), 4+r.IntN(40), now.Format("2006-01-02 15:04"))
}

// Payments.

var invoiceLines = []struct {
	desc  string
	price int
}{
	{"Enterprise plan — annual subscription", 36000},
	{"Additional seats × 25", 7500},
	{"Priority support", 4800},
	{"API overage (1.2M calls)", 1440},
	{"专业服务：数据迁移（5 人天）", 15000},
	{"私有化部署年度维护费", 28000},
	{"SSO / SCIM add-on", 3600},
}

var missingInvoices = []string{"INV-2026-999999", "INV-2025-000000"}

// invoiceID returns one of the demo fleet's invoices.
func (g *session) invoiceID() string {
	return fmt.Sprintf("INV-2026-%06d", 4100+g.rng.IntN(400))
}

func invoiceRecord(id string, now time.Time) obj {
	r := keyed(id)
	c := customers[r.IntN(len(customers))]
	n := 1 + r.IntN(3)
	lines := make(arr, 0, n)
	total := 0
	for i := 0; i < n; i++ {
		l := invoiceLines[(r.IntN(len(invoiceLines))+i)%len(invoiceLines)]
		qty := 1 + r.IntN(2)
		lines = append(lines, obj{{"description", l.desc}, {"quantity", qty}, {"unit_price", l.price}})
		total += qty * l.price
	}
	issued := now.AddDate(0, 0, -5-r.IntN(60))
	status := pick(r, []string{"paid", "paid", "open", "overdue"})
	return obj{
		{"invoice_id", id},
		{"customer_id", c.id},
		{"customer_name", c.name},
		{"currency", c.currency},
		{"amount_due", float64(total)},
		{"status", status},
		{"issued_at", issued.Format(time.DateOnly)},
		{"due_at", issued.AddDate(0, 0, 30).Format(time.DateOnly)},
		{"lines", lines},
	}
}

// Weather.

type city struct {
	name     string
	lo, hi   int // typical late-November range, °C
	zh       bool
	timezone string
}

var cities = []city{
	{"上海", 9, 15, true, "Asia/Shanghai"},
	{"北京", -3, 7, true, "Asia/Shanghai"},
	{"深圳", 17, 24, true, "Asia/Shanghai"},
	{"杭州", 8, 15, true, "Asia/Shanghai"},
	{"成都", 8, 13, true, "Asia/Shanghai"},
	{"Shanghai", 9, 15, false, "Asia/Shanghai"},
	{"Berlin", 1, 6, false, "Europe/Berlin"},
	{"London", 5, 10, false, "Europe/London"},
	{"New York", 3, 10, false, "America/New_York"},
	{"San Francisco", 10, 16, false, "America/Los_Angeles"},
	{"Tokyo", 8, 15, false, "Asia/Tokyo"},
	{"Singapore", 25, 31, false, "Asia/Singapore"},
}

// unknownCities get "no forecast available" every time: Atlantis does not
// exist, the others are misspellings of a city that does.
var unknownCities = []struct{ bad, good string }{
	{"Atlantis", ""},
	{"Shangai", "Shanghai"},
	{"San Fransisco", "San Francisco"},
	{"Tokio", "Tokyo"},
}

var (
	conditionsZH = []string{"晴", "多云", "阴", "小雨", "阵雨", "中雨", "雾"}
	conditionsEN = []string{"sunny", "partly cloudy", "overcast", "light rain", "showers", "moderate rain", "fog"}
	windZH       = []string{"东北风 2 级", "北风 3 级", "东风 2 级", "西北风 4 级", "南风 1 级"}
)

type day struct {
	date      time.Time
	cond      int
	lo, hi    int
	precip    int
	windKmh   int
	windLabel string
}

func forecastDays(c city, from time.Time, days int) []day {
	out := make([]day, days)
	for i := range out {
		d := from.AddDate(0, 0, i)
		r := keyed(c.name, d.Format(time.DateOnly))
		lo := c.lo - 2 + r.IntN(5)
		out[i] = day{
			date:      d,
			cond:      r.IntN(len(conditionsEN)),
			lo:        lo,
			hi:        max(lo+2, c.hi-2+r.IntN(5)),
			precip:    r.IntN(10) * 10,
			windKmh:   5 + r.IntN(30),
			windLabel: pick(r, windZH),
		}
	}
	return out
}

func forecastText(c city, ds []day) string {
	var b strings.Builder
	if c.zh {
		if len(ds) == 1 {
			fmt.Fprintf(&b, "%s 今日天气预报：\n", c.name)
		} else {
			fmt.Fprintf(&b, "%s 未来 %d 天天气预报：\n", c.name, len(ds))
		}
		for _, d := range ds {
			fmt.Fprintf(&b, "%d月%d日 %s，%d~%d°C，%s，降水概率 %d%%\n",
				d.date.Month(), d.date.Day(), conditionsZH[d.cond], d.lo, d.hi, d.windLabel, d.precip)
		}
		return b.String()
	}
	if len(ds) == 1 {
		fmt.Fprintf(&b, "Forecast for %s (%s), today:\n", c.name, c.timezone)
	} else {
		fmt.Fprintf(&b, "Forecast for %s (%s), next %d days:\n", c.name, c.timezone, len(ds))
	}
	for _, d := range ds {
		fmt.Fprintf(&b, "- %s %s: %s, %d–%d°C, wind %d km/h, precipitation %d%%\n",
			d.date.Format("Mon"), d.date.Format(time.DateOnly), conditionsEN[d.cond], d.lo, d.hi, d.windKmh, d.precip)
	}
	return b.String()
}

// forecastStructured is the 2026-07-28 structuredContent: an array, which
// that revision allows.
func forecastStructured(ds []day) arr {
	out := make(arr, len(ds))
	for i, d := range ds {
		out[i] = obj{{"date", d.date.Format(time.DateOnly)}, {"condition", conditionsEN[d.cond]},
			{"min_c", d.lo}, {"max_c", d.hi}, {"precip_pct", d.precip}}
	}
	return out
}

// GitHub.

var repoNames = []string{"billing-service", "web-app", "data-pipeline", "mcp-gateway"}

// privateRepos are repositories the token cannot see.
var privateRepos = []string{"payroll-engine", "security-audits"}

var issueTopics = []struct {
	query  string
	titles []string
}{
	{"connection pool", []string{
		"Connection pool exhausted under load on /v1/invoices",
		"Raise max pool size from 50 to 120 for reporting jobs",
		"pgbouncer: 'too many clients already' during rolling deploy",
	}},
	{"timeout", []string{
		"Upstream timeout calling PSP after 30s",
		"Flaky timeout in integration tests on CI",
		"Context deadline exceeded on bulk export",
	}},
	{"rate limit", []string{
		"Handle 429 from GitHub API with Retry-After",
		"Secondary rate limit hit by nightly sync",
	}},
	{"登录失败", []string{
		"登录失败：SSO 回调后提示令牌过期",
		"企业微信扫码登录偶发 500",
	}},
	{"memory leak", []string{
		"Memory leak in SSE stream handler",
		"Worker RSS grows 200MB/h after upgrade to 2.3",
	}},
	{"flaky test", []string{
		"TestRetryBackoff is flaky on arm64",
		"Quarantine flaky e2e checkout test",
	}},
}

var issueStates = []string{"open", "closed", "all"}

// misspelledStates are state values GitHub search silently matches nothing for.
var misspelledStates = []struct{ bad, good string }{
	{"opened", "open"},
	{"close", "closed"},
}

var githubUsers = []string{"lchen", "dkim", "mlee", "wanglei", "iberg", "tpatel", "zhaoyu"}

func issuesText(repo, query, state string, now time.Time) string {
	var titles []string
	for _, t := range issueTopics {
		if t.query == query {
			titles = t.titles
		}
	}
	if state != "open" && state != "closed" && state != "all" {
		titles = nil
	}
	if len(titles) == 0 {
		return fmt.Sprintf("No issues found in %s matching %q (state: %s).", repo, query, state)
	}
	r := keyed(repo, query, state)
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d issues in %s matching %q (state: %s):\n", len(titles), repo, query, state)
	num := 900 + r.IntN(2000)
	for _, t := range titles {
		st := state
		if st == "all" {
			st = pick(r, []string{"open", "closed"})
		}
		labels := pick(r, []string{"bug, p1", "bug", "enhancement", "bug, needs-triage", "infra, p2"})
		updated := now.AddDate(0, 0, -r.IntN(90)).Format(time.DateOnly)
		fmt.Fprintf(&b, "\n#%d %s\n  state: %s · labels: %s · comments: %d · updated %s by @%s\n",
			num, t, st, labels, r.IntN(30), updated, pick(r, githubUsers))
		num -= 1 + r.IntN(120)
	}
	return b.String()
}
