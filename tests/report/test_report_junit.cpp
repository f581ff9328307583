// JUnit XML (reports/junit.h): exact content on a small report, validity against tests/report/junit.xsd
// (xmllint) for what the CLI writes, and names that XML cannot hold as they are.
#include <gtest/gtest.h>

#include "reports/junit.h"
#include "support/audit_helpers.h"
#include "support/run_cli.h"

using namespace mpa;
using namespace mpa::test;

namespace {

ModelBuilder overflowing_model(const std::string& name = "scale", float gain = 1e4f) {
  ModelBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {64});
  b.initializer("gain", {}, {gain});
  b.node("Mul", {"x", "gain"}, {"y"}, name);
  b.output("y");
  return b;
}

// xmllint's verdict on `xml` against the JUnit schema: "" when valid.
std::string schema_violations(const TempDir& dir, const std::string& xml) {
  write_whole_file(dir / "junit.xml", xml);
  const std::string cmd = "xmllint --noout --schema " + std::string(MPA_SOURCE_DIR) + "/tests/report/junit.xsd " +
                          (dir / "junit.xml").string() + " >" + (dir / "xmllint.txt").string() + " 2>&1";
  return std::system(cmd.c_str()) == 0 ? "" : read_whole_file(dir / "xmllint.txt");
}

}  // namespace

TEST(JUnit, GatesAndUnsafeNodesAreTestcases) {
  Audited a = audit(overflowing_model(), {{{"x", normal({64}, 30, 0, 3)}}});
  a.report.model_path = "m.onnx";
  const std::string xml = report::junit_xml(a.report, {{"unsafe_nodes>0", true, "fp16: unsafe_nodes = 1 > 0"},
                                                       {"output.cosine<0.9", false, ""}},
                                            "2026-11-25T04:40:00", "ci-host");
  EXPECT_EQ(xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<testsuites name=\"mpaudit m.onnx\" tests=\"3\" failures=\"2\" errors=\"0\" time=\"0\">\n"
            "  <testsuite name=\"mpaudit gates\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0\" "
            "timestamp=\"2026-11-25T04:40:00\" hostname=\"ci-host\" id=\"0\" package=\"mpaudit\">\n"
            "    <testcase classname=\"mpaudit.gates\" name=\"unsafe_nodes&gt;0\" time=\"0\">\n"
            "      <failure message=\"fp16: unsafe_nodes = 1 &gt; 0\" type=\"gate\">fp16: unsafe_nodes = 1 &gt; 0</failure>\n"
            "    </testcase>\n"
            "    <testcase classname=\"mpaudit.gates\" name=\"output.cosine&lt;0.9\" time=\"0\"/>\n"
            "  </testsuite>\n"
            "  <testsuite name=\"mpaudit fp16 unsafe nodes\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" "
            "time=\"0\" timestamp=\"2026-11-25T04:40:00\" hostname=\"ci-host\" id=\"1\" package=\"mpaudit\">\n"
            "    <testcase classname=\"mpaudit.fp16.Mul\" name=\"scale\" time=\"0\">\n"
            "      <failure message=\"overflow: reference absmax 8.31e+05 exceeds fp16 max 65504 in 55 of 64 values; "
            "Inf reaches output &apos;y&apos;: 55 of 64 values\" type=\"overflow\">unsafe overflow: reference absmax "
            "8.31e+05 exceeds fp16 max 65504 in 55 of 64 values; Inf reaches output &apos;y&apos;: 55 of 64 values&#10;"
            "unsafe nonfinite: the node alone in fp16 gives 0 NaN and 55 Inf where the reference is finite&#10;"
            "consequence: Inf reaches output &apos;y&apos;: 55 of 64 values&#10;</failure>\n"
            "    </testcase>\n"
            "  </testsuite>\n"
            "</testsuites>\n");
  const TempDir dir;
  EXPECT_EQ(schema_violations(dir, xml), "");
  // The schema check can fail: a testcase without its classname does not validate.
  std::string broken = xml;
  broken.replace(broken.find("classname="), 10, "klass=");
  EXPECT_NE(schema_violations(dir, broken), "");
}

TEST(JUnit, NamesXmlCannotHoldAreEscaped) {
  Audited a = audit(overflowing_model(std::string("bad\x01name\xff<&>")), {{{"x", normal({64}, 30, 0, 3)}}});
  const std::string xml = report::junit_xml(a.report, {}, "2026-11-25T04:40:00", "ci-host");
  EXPECT_NE(xml.find("name=\"bad\\x01name\\xff&lt;&amp;&gt;\""), std::string::npos) << xml;
  const TempDir dir;
  EXPECT_EQ(schema_violations(dir, xml), "");
}

TEST(JUnit, TheCliWritesValidJUnitForAuditAndMerge) {
  const TempDir dir;
  overflowing_model("scale", 1e6f).save(dir / "m.onnx");  // random inputs of unit order
  const std::string model = (dir / "m.onnx").string();
  const CliResult audited = run_cli(dir, "audit " + model + " --samples 2 --quiet --json " + (dir / "r.json").string() +
                                             " --junit " + (dir / "audit.xml").string() + " --fail-on 'unsafe_nodes>0'");
  EXPECT_EQ(audited.exit_code, 1) << audited.err;
  const std::string xml = read_whole_file(dir / "audit.xml");
  EXPECT_NE(xml.find("<testcase classname=\"mpaudit.fp16.Mul\" name=\"scale\""), std::string::npos) << xml;
  EXPECT_EQ(schema_violations(dir, xml), "");
  for (int k = 1; k <= 2; ++k)
    ASSERT_EQ(run_cli(dir, "audit " + model + " --samples 2 --shard " + std::to_string(k) + "/2 --quiet --json " +
                               (dir / ("s" + std::to_string(k) + ".json")).string())
                  .exit_code,
              1);
  const CliResult merged = run_cli(dir, "merge " + (dir / "s1.json").string() + " " + (dir / "s2.json").string() +
                                            " -o " + (dir / "m.json").string() + " --quiet --junit " +
                                            (dir / "merge.xml").string());
  EXPECT_EQ(merged.exit_code, 1) << merged.err;
  EXPECT_EQ(schema_violations(dir, read_whole_file(dir / "merge.xml")), "");
}
