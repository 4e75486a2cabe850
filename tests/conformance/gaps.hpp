// The expected gaps of the conformance suite: every Triton tutorial step and language
// operation (python/test/unit/language/test_core.py) that tl cannot express yet, or that
// tl expresses and gets wrong, in ONE table (gaps.cpp). The tests consume it:
//
//  - a case tl cannot spell is not written; its test calls CONFORMANCE_GAP("id"), which
//    skips with the gap's id and reason, and fails if the id is not in the table;
//  - a case tl spells but gets wrong (a trace or compile error, a wrong result) is written
//    and run through expect_known_failure("id", ...): skipped while it fails, a FAILURE
//    once it passes, so a fix is noticed and the gap removed;
//  - a gap whose operation would be a function taking tiles carries a compile-time probe
//    (a requires-expression found by argument-dependent lookup on tl::tile): the test
//    Gaps.ProbedOperationsAreStillMissing fails once tl declares it;
//  - docs/conformance.md's table is rendered from this one (render_markdown) and checked
//    by Gaps.DocsAreRenderedFromTheTable (TL_CONFORMANCE_WRITE_DOCS=1 rewrites it).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace conformance {

enum class gap_kind {
  missing,        // no spelling in tl: the case is not written (its test skips)
  partial,        // the rest of the case is transcribed and run; this part is left out or spelled otherwise
  known_failure,  // written and run; fails (skipped while it fails, a failure once it passes)
};

struct gap {
  const char* id;       // what a Triton user writes: "tl.rand", "tl.dot_scaled"
  const char* where;    // the tutorial or test_core test that needs it
  gap_kind kind;
  const char* missing;  // what tl lacks (or, for a known failure, what goes wrong)
  const char* instead;  // what the transcription does instead ("" when the case is skipped)
  bool (*landed)();     // a compile-time probe: true once tl declares the operation (null: none)
};

const std::vector<gap>& gaps();
// The listed gap `id`; a test naming an unlisted id fails (the table is the only list).
const gap* find_gap(std::string_view id);
std::string skip_message(const gap& g);
// The ids of the gaps a test has named so far in this process (CONFORMANCE_GAP,
// note_partial, expect_known_failure): after a whole run, every listed gap must be among
// them (Gaps.EveryGapIsNamedByATest), so the table lists nothing the tests do not consume.
const std::vector<std::string>& named_gaps();

// The markdown table of docs/conformance.md.
std::string render_markdown();

// Notes that the calling test transcribes its case without the part the partial gap `id`
// names (a test naming an id the table does not list as partial fails).
void note_partial(std::string_view id);

// Runs a case listed as a known failure: skips (with the gap and the first failure) while
// it fails, by an exception or a failed EXPECT_*; fails the test once it passes.
void expect_known_failure(std::string_view id, const std::function<void()>& body);
// The same for a gap given whole (the table's, or a test's own to check this mechanism).
void run_as_known_failure(const gap& g, const std::function<void()>& body);

}  // namespace conformance

// Skips the current test naming a listed gap (a test naming an unlisted id fails).
#define CONFORMANCE_GAP(id)                                                     \
  do {                                                                          \
    const ::conformance::gap* conformance_gap_ = ::conformance::find_gap(id);   \
    if (!conformance_gap_) FAIL() << "gap '" << (id) << "' is not in tests/conformance/gaps.cpp"; \
    GTEST_SKIP() << ::conformance::skip_message(*conformance_gap_);             \
  } while (0)
