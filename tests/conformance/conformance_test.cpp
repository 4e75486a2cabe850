// The conformance suite's own checks on its table of expected gaps (gaps.cpp): ids unique,
// the operations a compile-time probe can see still missing from tl (else a gap closed and
// its case should be transcribed), and docs/conformance.md rendered from the table.
// The cases themselves are the other files of this directory: tutorial_NN_*.cpp (Triton's
// tutorials 01-11) and core_*.cpp (the operations of Triton's test_core.py), linked into
// this one executable (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest-spi.h>

#include "conformance/gaps.hpp"

namespace {

TEST(Gaps, IdsAreUnique) {
  std::set<std::string> seen;
  for (const auto& g : conformance::gaps()) EXPECT_TRUE(seen.insert(g.id).second) << g.id;
}

// A probe that finds its operation means tl has grown it: the case the gap skips can now
// be transcribed, and the gap removed.
TEST(Gaps, ProbedOperationsAreStillMissing) {
  int probed = 0;
  for (const auto& g : conformance::gaps()) {
    if (!g.landed) continue;
    ++probed;
    EXPECT_FALSE(g.landed()) << "tl declares what gap '" << g.id << "' lists as missing: transcribe " << g.where
                             << " and remove the gap from tests/conformance/gaps.cpp";
  }
  EXPECT_GE(probed, 5);  // (the probes work at all; the count falls as gaps close: 8 after tl.sort/tl.histogram)
}

// The mechanisms that keep the table honest fail where they should: a test naming an id
// the table lacks (or lists as another kind), and a known failure whose case passes.
const conformance::gap kSyntheticKnownFailure = {"synthetic", "this test", conformance::gap_kind::known_failure,
                                                 "nothing", "", nullptr};

TEST(Gaps, MisnamedGapsAndPassingKnownFailuresFail) {
  EXPECT_EQ(conformance::find_gap("no such gap"), nullptr);
  EXPECT_NONFATAL_FAILURE(conformance::note_partial("no such gap"), "is not a partial gap");
  EXPECT_NONFATAL_FAILURE(conformance::note_partial("tl.swizzle2d"), "is not a partial gap");  // a missing one
  EXPECT_NONFATAL_FAILURE(conformance::expect_known_failure("tl.swizzle2d", [] {}), "is not a known failure");
  EXPECT_NONFATAL_FAILURE(conformance::run_as_known_failure(kSyntheticKnownFailure, [] {}), "passes now");
}

// docs/conformance.md holds the table between two markers, as render_markdown() writes
// it. TL_CONFORMANCE_WRITE_DOCS=1 rewrites that part of the file.
TEST(Gaps, DocsAreRenderedFromTheTable) {
  const std::string path = std::string(TL_SOURCE_DIR) + "/docs/conformance.md";
  // (The GPU machine runs the bundle's binaries without the source tree.)
  if (!std::ifstream(std::string(TL_SOURCE_DIR) + "/CMakeLists.txt")) GTEST_SKIP() << "no source tree at " << TL_SOURCE_DIR;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  const std::string begin = "<!-- gaps: generated from tests/conformance/gaps.cpp -->\n", end = "<!-- end of gaps -->";
  size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_TRUE(b != std::string::npos && e != std::string::npos && b < e) << path << " lacks the markers";
  b += begin.size();
  std::string want = conformance::render_markdown();
  if (const char* w = std::getenv("TL_CONFORMANCE_WRITE_DOCS"); w && std::string(w) == "1") {
    doc.replace(b, e - b, want);
    std::ofstream(path) << doc;
    return;
  }
  EXPECT_EQ(doc.substr(b, e - b), want)
      << path << " is out of date: run `TL_CONFORMANCE_WRITE_DOCS=1 ./tests/conformance_test "
      << "--gtest_filter=Gaps.DocsAreRenderedFromTheTable` in the build directory";
}

// After a whole run (no --gtest_filter), every gap of the table has been named by a test:
// a gap no test consumes is a list that could drift. Checked when the program's tests end.
class EveryGapIsNamedByATest : public ::testing::Environment {
 public:
  void TearDown() override {
    if (::testing::GTEST_FLAG(filter) != "*") return;
    const auto& named = conformance::named_gaps();
    for (const auto& g : conformance::gaps())
      if (std::find(named.begin(), named.end(), g.id) == named.end())
        ADD_FAILURE() << "gap '" << g.id << "' in tests/conformance/gaps.cpp is named by no test (" << g.where
                      << "): a test must skip with it, note it as partial or run it as a known failure";
  }
};
const auto* const every_gap_is_named = ::testing::AddGlobalTestEnvironment(new EveryGapIsNamedByATest);

}  // namespace
