#include "reports/junit.h"

#include <cstdint>

namespace mpa::report {

namespace {

// Text for an XML attribute or element: markup escaped, bytes XML 1.0 cannot hold (control characters,
// invalid UTF-8) written as \xNN, so a model's names come out readable whatever they hold.
std::string xml_text(const std::string& s) {
  std::string out;
  auto hex = [&](unsigned char c) {
    static const char digits[] = "0123456789abcdef";
    out += "\\x";
    out += digits[c >> 4];
    out += digits[c & 15];
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&apos;"; break;
        case '\n': out += "&#10;"; break;
        case '\t': out += "&#9;"; break;
        default:
          if (c < 0x20 || c == 0x7f) hex(c);
          else out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // A well-formed UTF-8 sequence (no overlong forms, no surrogates, at most U+10FFFF) is kept whole.
    const size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    bool ok = len > 0 && c <= 0xf4 && i + len <= s.size();
    uint32_t cp = ok ? c & (0xff >> (len + 1)) : 0;
    for (size_t k = 1; ok && k < len; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + k]);
      ok = (d & 0xc0) == 0x80;
      cp = (cp << 6) | (d & 0x3f);
    }
    ok = ok && !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10ffff)) &&
         !(cp >= 0xd800 && cp <= 0xdfff) && cp != 0xfffe && cp != 0xffff;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      hex(c);
      ++i;
    }
  }
  return out;
}

std::string attribute(const char* name, const std::string& value) {
  return std::string(" ") + name + "=\"" + xml_text(value) + "\"";
}

struct Suite {
  std::string name;
  std::vector<std::string> cases;
  int64_t failures = 0;
};

std::string testcase(const std::string& classname, const std::string& name, const std::string& failure_type,
                     const std::string& message, const std::string& body) {
  std::string out = "    <testcase" + attribute("classname", classname) + attribute("name", name) + " time=\"0\"";
  if (failure_type.empty()) return out + "/>\n";
  return out + ">\n      <failure" + attribute("message", message) + attribute("type", failure_type) + ">" +
         xml_text(body) + "</failure>\n    </testcase>\n";
}

}  // namespace

std::string junit_xml(const Report& report, const std::vector<GateOutcome>& gates, const std::string& timestamp,
                      const std::string& hostname) {
  std::vector<Suite> suites;
  Suite& gate_suite = suites.emplace_back(Suite{"mpaudit gates", {}, 0});
  for (const GateOutcome& g : gates) {
    gate_suite.cases.push_back(testcase("mpaudit.gates", g.expression, g.failed ? "gate" : "", g.detail,
                                        g.failed ? g.detail : ""));
    gate_suite.failures += g.failed;
  }
  for (const auto& [fmt, summary] : report.summary) {
    Suite& suite = suites.emplace_back(Suite{"mpaudit " + fmt + " unsafe nodes", {}, 0});
    for (const NodeStats& n : report.nodes) {
      auto t = n.targets.find(fmt);
      if (t == n.targets.end() || t->second.verdict != Verdict::Unsafe) continue;
      std::string first, all;
      for (const Reason& r : t->second.reasons) {
        if (first.empty() && r.level == Verdict::Unsafe) first = r.code + ": " + r.message;
        all += verdict_name(r.level) + " " + r.code + ": " + r.message + "\n";
      }
      if (!t->second.consequence.empty()) all += "consequence: " + t->second.consequence + "\n";
      const std::string type = first.substr(0, first.find(':'));
      suite.cases.push_back(testcase("mpaudit." + fmt + "." + n.op_type, n.name, type, first, all));
      ++suite.failures;
    }
  }
  int64_t tests = 0, failures = 0;
  for (const Suite& s : suites) {
    tests += static_cast<int64_t>(s.cases.size());
    failures += s.failures;
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites" + attribute("name", "mpaudit " + report.model_path) +
                    " tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) +
                    "\" errors=\"0\" time=\"0\">\n";
  for (size_t i = 0; i < suites.size(); ++i) {
    const Suite& s = suites[i];
    out += "  <testsuite" + attribute("name", s.name) + " tests=\"" + std::to_string(s.cases.size()) +
           "\" failures=\"" + std::to_string(s.failures) + "\" errors=\"0\" skipped=\"0\" time=\"0\"" +
           attribute("timestamp", timestamp) + attribute("hostname", hostname) + " id=\"" + std::to_string(i) +
           "\"" + attribute("package", "mpaudit") + ">\n";
    for (const std::string& c : s.cases) out += c;
    out += "  </testsuite>\n";
  }
  return out + "</testsuites>\n";
}

}  // namespace mpa::report
