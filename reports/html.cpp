#include "reports/html.h"

#include <cmath>

namespace mpa::report {

namespace {

// A histogram as [bin, count] pairs of its nonzero bins: most of the 86 bins are empty.
json sparse(const probes::ExpHistogram& h) {
  json out = json::array();
  for (int b = 0; b < probes::ExpHistogram::kBins; ++b)
    if (h.counts[static_cast<size_t>(b)] > 0) out.push_back({b, h.counts[static_cast<size_t>(b)]});
  return out;
}

// What the page needs of the report: per target its summary and format, per node its figures per target.
json page_data(const Report& r) {
  json targets = json::object();
  for (const auto& [fmt, s] : r.summary) {
    const FormatTraits& f = format_traits(storage_format(*parse_format(fmt)));
    json outputs = json::array();
    for (const OutputSummary& o : s.outputs)
      outputs.push_back({{"name", o.name}, {"max_abs", probes::number_or_null(o.max_abs_err)}, {"max_rel", probes::number_or_null(o.max_rel_err)},
                         {"cosine", probes::number_or_null(o.cosine)}, {"sqnr", probes::number_or_null(o.sqnr_db)}});
    targets[fmt] = {{"pass", s.pass},
                    {"unsafe", s.unsafe_nodes.size()},
                    {"warn", s.warn_nodes.size()},
                    {"first_unsafe", s.first_unsafe},
                    {"first_jump", s.first_error_jump},
                    {"culprits", s.culprits},
                    {"keep_fp32", s.keep_fp32},
                    {"advice_verified", s.advice.verified},
                    {"advice_note", s.advice.note},
                    {"outputs", outputs},
                    // The format's windows on the exponent axis: subnormals from, normals from, finite up to.
                    {"window", {std::log2(f.min_subnormal), std::log2(f.min_normal), std::log2(f.max_finite)}},
                    {"warn_db", r.config.thresholds.sqnr_warn_db.count(fmt) ? r.config.thresholds.sqnr_warn_db.at(fmt) : 40},
                    {"unsafe_db", r.config.thresholds.sqnr_unsafe_db.count(fmt) ? r.config.thresholds.sqnr_unsafe_db.at(fmt) : 20}};
  }
  json nodes = json::array();
  for (const NodeStats& n : r.nodes) {
    json per = json::object();
    const TensorStats* t = nullptr;
    for (const TensorStats& x : n.tensors)
      if (x.measured && !t) t = &x;
    for (const auto& [fmt, nt] : n.targets) {
      json reasons = json::array();
      for (const Reason& reason : nt.reasons)
        reasons.push_back({verdict_name(reason.level), reason.code, reason.message});
      json p = {{"v", static_cast<int>(nt.verdict)}, {"reasons", reasons}, {"consequence", nt.consequence},
                {"kept", nt.kept_fp32}};
      if (t && t->targets.count(fmt)) {
        const TensorTarget& tt = t->targets.at(fmt);
        p["iso"] = tt.isolated.compared ? probes::number_or_null(tt.isolated.sqnr_db()) : json(nullptr);
        p["prop"] = tt.propagated.compared ? probes::number_or_null(tt.propagated.sqnr_db()) : json(nullptr);
        p["bad"] = tt.propagated.nonfinite();
        p["over"] = tt.fit.overflow;
        p["flush"] = tt.fit.nonzero ? probes::number_or_null(100.0 * static_cast<double>(tt.fit.flush_to_zero) / static_cast<double>(tt.fit.nonzero))
                                    : json(nullptr);
        p["ph"] = sparse(tt.propagated_hist);
      }
      per[fmt] = std::move(p);
    }
    json node = {{"name", n.name}, {"op", n.op_type}, {"t", per}};
    if (t) {
      node["out"] = t->name;
      node["absmax"] = probes::number_or_null(t->range.absmax());
      node["h"] = sparse(t->hist);
    }
    nodes.push_back(std::move(node));
  }
  return {{"model", r.model_path},
          {"sha256", r.model_sha256},
          {"tool", r.tool_version},
          {"samples", r.config.samples},
          {"inputs", r.config.inputs_text()},
          {"reference", r.config.reference},
          {"targets", targets},
          {"nodes", nodes},
          {"min_exp", probes::ExpHistogram::kMinExp}};
}

// JSON inside a <script> element: "</" would end it, so every "<" is written as \u003c.
std::string script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

const char* const kStyle = R"CSS(
*{box-sizing:border-box}body{margin:0;font:13px/1.4 system-ui,sans-serif;background:#111418;color:#d8dde3}
header{padding:10px 16px;background:#1b2027;border-bottom:1px solid #2c333c;display:flex;gap:16px;align-items:center;flex-wrap:wrap}
h1{font-size:16px;margin:0}h2{font-size:14px;margin:14px 0 6px}small,.dim{color:#8a949f}
main{display:grid;grid-template-columns:minmax(0,3fr) minmax(320px,2fr);gap:12px;padding:12px 16px}
section{background:#181c22;border:1px solid #2c333c;border-radius:6px;padding:10px 12px;min-width:0}
.pass{color:#3fb950;font-weight:600}.fail{color:#f85149;font-weight:600}.unsafe{color:#f85149}.warn{color:#d29922}.safe{color:#3fb950}
a{color:#58a6ff;text-decoration:none;cursor:pointer}a:hover{text-decoration:underline}
table{border-collapse:collapse;width:100%}th,td{padding:3px 6px;text-align:left;border-bottom:1px solid #242a32;white-space:nowrap}
th{position:sticky;top:0;background:#1b2027;cursor:pointer;user-select:none}td.name{max-width:420px;overflow:hidden;text-overflow:ellipsis}
tr.sel td{background:#23364d}#tablewrap{max-height:520px;overflow:auto}input,select{background:#0d1117;color:#d8dde3;border:1px solid #2c333c;border-radius:4px;padding:4px 6px}
.cards{display:flex;gap:12px;flex-wrap:wrap}.card{flex:1;min-width:220px}.reason{margin:2px 0}svg text{fill:#8a949f;font-size:10px}
)CSS";

const char* const kScript = R"JS(
'use strict';
const D = JSON.parse(document.getElementById('data').textContent);
const fmts = Object.keys(D.targets);
let fmt = fmts.find(f => !D.targets[f].pass) || fmts[0], sortKey = 'index', sortDir = 1, selected = -1, pending = 0;
const $ = id => document.getElementById(id);
const esc = s => String(s).replace(/[&<>"']/g, c => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
const VERDICT = ['safe', 'warn', 'unsafe'];
const fmtNum = (v, d) => v === null || v === undefined ? '-' : (Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-3 && v !== 0) ? v.toExponential(2) : v.toFixed(d));
const byName = new Map(D.nodes.map((n, i) => [n.name, i]));
const link = i => i < 0 ? '<span class="dim">none</span>' : `<a data-node="${i}">${esc(D.nodes[i].name)}</a> <span class="dim">#${i} ${esc(D.nodes[i].op)}</span>`;
const first = pred => D.nodes.findIndex(n => n.t[fmt] && pred(n.t[fmt]));

function card() {
  $('cards').innerHTML = fmts.map(f => {
    const t = D.targets[f];
    const outs = t.outputs.map(o => `<div>output <b>${esc(o.name)}</b>: SQNR ${fmtNum(o.sqnr, 1)} dB, cosine ${fmtNum(o.cosine, 6)}, max rel err ${fmtNum(o.max_rel, 3)}</div>`).join('');
    const keep = t.keep_fp32.length ? `<div>keep in fp32 (${t.advice_verified ? 'verified' : 'not verified'}): ${t.keep_fp32.map(n => esc(n)).join(', ')}</div>` : '';
    return `<section class="card"><h2>${esc(f)} <span class="${t.pass ? 'pass' : 'fail'}">${t.pass ? 'PASS' : 'FAIL'}</span></h2>
      <div><span class="unsafe">${t.unsafe} unsafe</span>, <span class="warn">${t.warn} warn</span> of ${D.nodes.length} nodes</div>
      <div>first unsafe: ${link(byName.has(t.first_unsafe) ? byName.get(t.first_unsafe) : -1)}</div>${outs}${keep}
      ${t.advice_note ? `<div class="dim">${esc(t.advice_note)}</div>` : ''}</section>`;
  }).join('');
}

function alerts() {
  const t = D.targets[fmt];
  const rows = [['overflow', first(x => x.over > 0), 'unsafe'], ['NaN / Inf', first(x => x.bad > 0), 'unsafe'],
                ['unsafe', first(x => x.v === 2), 'unsafe'], ['harm root', first(x => x.v === 2 && x.consequence), 'unsafe'],
                ['saturation absorbed', first(x => x.v === 1 && x.consequence), 'warn'],
                ['error jump', byName.has(t.first_jump) ? byName.get(t.first_jump) : -1, 'warn']];
  $('alerts').innerHTML = '<table>' + rows.map(([what, i, level]) => `<tr><td class="${i >= 0 ? level : 'dim'}">${what}</td><td>${link(i)}</td></tr>`).join('') + '</table>';
}

function depth() {
  const W = 600, H = 160, n = Math.max(D.nodes.length, 2), t = D.targets[fmt];
  const y = v => H - Math.max(0, Math.min(120, v)) / 120 * H;
  const line = key => D.nodes.map((d, i) => { const v = d.t[fmt] && d.t[fmt][key]; return v === null || v === undefined ? null : `${(i / (n - 1) * W).toFixed(1)},${y(v).toFixed(1)}`; }).filter(p => p).join(' ');
  const marks = D.nodes.map((d, i) => d.t[fmt] && d.t[fmt].v === 2 ? `<line x1="${(i / (n - 1) * W).toFixed(1)}" x2="${(i / (n - 1) * W).toFixed(1)}" y1="0" y2="${H}" stroke="#f8514944"/>` : '').join('');
  $('depth').innerHTML = `<svg viewBox="0 0 ${W} ${H + 14}" width="100%">${marks}
    <line x1="0" x2="${W}" y1="${y(t.warn_db)}" y2="${y(t.warn_db)}" stroke="#d29922" stroke-dasharray="4"/><line x1="0" x2="${W}" y1="${y(t.unsafe_db)}" y2="${y(t.unsafe_db)}" stroke="#f85149" stroke-dasharray="4"/>
    <polyline fill="none" stroke="#58a6ff" points="${line('iso')}"/><polyline fill="none" stroke="#e3b341" points="${line('prop')}"/>
    <text x="2" y="${H + 12}">node 0</text><text x="${W - 60}" y="${H + 12}">node ${D.nodes.length - 1}</text></svg>
    <div class="dim"><span style="color:#58a6ff">isolated</span> and <span style="color:#e3b341">propagated</span> SQNR (dB, 0..120) along execution order; dashed: warn / unsafe limits; red: unsafe nodes</div>`;
}

function rows() {
  let re = null;
  try { re = $('filter').value ? new RegExp($('filter').value, 'i') : null; } catch (e) { re = null; }
  const list = [];
  D.nodes.forEach((d, i) => { const x = d.t[fmt]; if (x && (!re || re.test(d.name) || re.test(d.op))) list.push({i, d, x}); });
  const key = r => sortKey === 'index' ? r.i : sortKey === 'name' ? r.d.name : sortKey === 'op' ? r.d.op : sortKey === 'verdict' ? r.x.v : sortKey === 'absmax' ? r.d.absmax : r.x[sortKey];
  list.sort((a, b) => { const ka = key(a), kb = key(b); if (ka === kb) return a.i - b.i; if (ka === null || ka === undefined) return 1; if (kb === null || kb === undefined) return -1; return (ka < kb ? -1 : 1) * sortDir; });
  $('count').textContent = `${list.length} of ${D.nodes.length} nodes`;
  const row = ({i, d, x}) => `<tr data-node="${i}" id="node-${i}"${i === selected ? ' class="sel"' : ''}><td>${i}</td><td class="name" title="${esc(d.name)}">${esc(d.name)}</td><td>${esc(d.op)}</td><td class="${VERDICT[x.v]}">${VERDICT[x.v]}</td><td>${fmtNum(d.absmax, 3)}</td><td>${x.over || 0}</td><td>${fmtNum(x.flush, 2)}</td><td>${fmtNum(x.iso, 1)}</td><td>${fmtNum(x.prop, 1)}</td></tr>`;
  // The rows in view first, the rest right after the page has painted: a large model opens at once.
  const body = $('rows'), shown = 200, run = ++pending;
  body.innerHTML = list.slice(0, shown).map(row).join('');
  if (list.length > shown) setTimeout(() => { if (run === pending) body.insertAdjacentHTML('beforeend', list.slice(shown).map(row).join('')); }, 0);
}

function histogram(h, ph, win) {
  const W = 420, H = 120, bins = 86, bw = W / bins, counts = new Array(bins).fill(0), prop = new Array(bins).fill(0);
  (h || []).forEach(([b, c]) => counts[b] = c); (ph || []).forEach(([b, c]) => prop[b] = c);
  const max = Math.max(1, ...counts, ...prop), y = c => c ? Math.log10(c + 1) / Math.log10(max + 1) * H : 0;
  const xOf = e => (2 + e - D.min_exp) * bw;
  const zone = (a, b, c) => `<rect x="${Math.max(0, a)}" width="${Math.max(0, Math.min(W, b) - Math.max(0, a))}" y="0" height="${H}" fill="${c}"/>`;
  const bars = (cs, color) => cs.map((c, b) => c ? `<rect x="${(b * bw).toFixed(1)}" width="${(bw * 0.8).toFixed(1)}" y="${(H - y(c)).toFixed(1)}" height="${y(c).toFixed(1)}" fill="${color}"/>` : '').join('');
  return `<svg viewBox="0 0 ${W} ${H + 14}" width="100%">${zone(0, xOf(Math.floor(win[0])), '#8a949f22')}${zone(xOf(Math.floor(win[0])), xOf(Math.floor(win[1])), '#a371f722')}${zone(xOf(Math.floor(win[2]) + 1), W, '#f8514933')}
    ${bars(counts, '#58a6ffcc')}${bars(prop, '#e3b34199')}<text x="0" y="${H + 12}">2^${D.min_exp}</text><text x="${xOf(0) - 6}" y="${H + 12}">2^0</text><text x="${W - 34}" y="${H + 12}">2^${-D.min_exp}</text></svg>
    <div class="dim"><span style="color:#58a6ff">reference</span> and <span style="color:#e3b341">propagated</span> exponents (log counts); grey: flushes, violet: subnormal, red: overflow in ${esc(fmt)}</div>`;
}

function inspect(i) {
  selected = i;
  document.querySelectorAll('tr.sel').forEach(r => r.classList.remove('sel'));
  const row = $('node-' + i), wrap = $('tablewrap');
  if (row) { row.classList.add('sel'); if (row.offsetTop < wrap.scrollTop || row.offsetTop > wrap.scrollTop + wrap.clientHeight - 30) wrap.scrollTop = row.offsetTop - wrap.clientHeight / 2; }
  const d = D.nodes[i], x = d.t[fmt];
  if (!x) { $('inspector').innerHTML = ''; return; }
  const reasons = x.reasons.length ? x.reasons.map(([level, code, msg]) => `<div class="reason"><b class="${level}">${level}</b> ${esc(code)}: ${esc(msg)}</div>`).join('') : '<div class="dim">no reasons: safe in this format</div>';
  $('inspector').innerHTML = `<h2>#${i} ${esc(d.name)} <span class="dim">(${esc(d.op)})</span> <span class="${VERDICT[x.v]}">${VERDICT[x.v]}</span>${x.kept ? ' <span class="dim">kept in fp32</span>' : ''}</h2>${reasons}
    ${x.consequence ? `<div><span class="dim">consequence:</span> ${esc(x.consequence)}</div>` : ''}
    ${d.out ? `<h2>output ${esc(d.out)}</h2>` + histogram(d.h, x.ph, D.targets[fmt].window) + `<div>absmax ${fmtNum(d.absmax, 3)}, overflow ${x.over || 0}, flushed ${fmtNum(x.flush, 2)}%, isolated SQNR ${fmtNum(x.iso, 1)} dB, propagated ${fmtNum(x.prop, 1)} dB</div>` : '<div class="dim">no floating output</div>'}`;
}

function render() { alerts(); depth(); rows(); if (selected >= 0) inspect(selected); }
document.addEventListener('click', e => { const a = e.target.closest('[data-node]'); if (a) inspect(+a.dataset.node); });
$('head').addEventListener('click', e => { const k = e.target.dataset.key; if (!k) return; sortDir = sortKey === k ? -sortDir : 1; sortKey = k; rows(); });
$('filter').addEventListener('input', rows);
$('target').innerHTML = fmts.map(f => `<option${f === fmt ? ' selected' : ''}>${esc(f)}</option>`).join('');
$('target').addEventListener('change', e => { fmt = e.target.value; render(); });
$('model').textContent = `${D.model} · ${D.nodes.length} nodes · ${D.samples} sample(s) (${D.inputs}) · reference ${D.reference} · mpaudit ${D.tool}`;
card(); render();
const firstBad = byName.get(D.targets[fmt].first_unsafe); inspect(firstBad === undefined ? 0 : firstBad);
document.body.dataset.renderMs = performance.now().toFixed(1);
// #bench: time what a user does next (sort the table by verdict, filter it), for the browser test.
if (location.hash === '#bench') setTimeout(() => {
  let t0 = performance.now(); sortKey = 'verdict'; sortDir = -1; rows(); document.body.dataset.sortMs = (performance.now() - t0).toFixed(1);
  t0 = performance.now(); $('filter').value = 'attention'; rows(); document.body.dataset.filterMs = (performance.now() - t0).toFixed(1);
}, 0);
)JS";

}  // namespace

std::string html_report(const Report& report) {
  const std::string data = script_safe(page_data(report).dump(-1, ' ', false, json::error_handler_t::replace));
  std::string out;
  out += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n";
  // No request may leave the page: data, styles and scripts are inline, images are SVG in the document.
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; "
         "style-src 'unsafe-inline'; img-src data:\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>mpaudit report</title>\n<style>";
  out += kStyle;
  out += "</style></head><body>\n<header><h1>mpaudit</h1><span id=\"model\" class=\"dim\"></span>"
         "<label>target <select id=\"target\"></select></label></header>\n<main><div>\n"
         "<div class=\"cards\" id=\"cards\"></div>\n"
         "<section><h2>Alerts</h2><div id=\"alerts\"></div></section>\n"
         "<section><h2>Divergence along depth</h2><div id=\"depth\"></div></section>\n"
         "<section><h2>Nodes <label class=\"dim\">filter by name or op (regex) <input id=\"filter\"></label> <small id=\"count\"></small></h2>"
         "<div id=\"tablewrap\"><table><thead id=\"head\"><tr><th data-key=\"index\">#</th><th data-key=\"name\">name</th>"
         "<th data-key=\"op\">op</th><th data-key=\"verdict\">verdict</th><th data-key=\"absmax\">absmax</th>"
         "<th data-key=\"over\">overflow</th><th data-key=\"flush\">flush %</th><th data-key=\"iso\">iso dB</th>"
         "<th data-key=\"prop\">prop dB</th></tr></thead><tbody id=\"rows\"></tbody></table></div></section>\n"
         "</div><div><section id=\"inspector\"></section></div></main>\n";
  out += "<script type=\"application/json\" id=\"data\">" + data + "</script>\n<script>";
  out += kScript;
  out += "</script>\n</body></html>\n";
  return out;
}

}  // namespace mpa::report
