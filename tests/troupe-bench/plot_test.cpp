#include "apps/troupe-bench/plot.hpp"

#include <catch2/catch.hpp>
#include <string>

using namespace troupe::bench;

namespace {

std::string title_line(const std::string& script) {
  auto at = script.find("set title ");
  REQUIRE(at != std::string::npos);
  return script.substr(at, script.find('\n', at) - at);
}

stage_summary stage(double rate, double e2e_p50, double ttft_p50) {
  stage_summary s;
  s.request_rate = rate;
  s.e2e.count = 10;
  s.e2e.p50 = e2e_p50;
  s.e2e.p99 = 2 * e2e_p50;
  s.ttft.count = ttft_p50 > 0 ? 10 : 0;
  s.ttft.p50 = ttft_p50;
  s.ttft.p99 = 2 * ttft_p50;
  return s;
}

} // namespace

TEST_CASE("a short title stays on one line, quotes and backslashes escaped", "[plot]") {
  auto script = plot_script({stage(10, 100, 20)}, "out.png", R"(chat "x" a\b)");
  CHECK(title_line(script) == R"(set title "chat \"x\" a\\b")");
}

TEST_CASE("a long title breaks after a comma into lines the plot can hold", "[plot]") {
  const std::string title =
      "chat streamed, shared-prefix: 4 system prompts x 1000 words (zipf 0.00), 32 users x 3 "
      "turns of 50 words (answers 50), seed 1";
  auto line = title_line(plot_script({stage(10, 100, 20)}, "out.png", title));
  CHECK(line == "set title \"chat streamed, shared-prefix: 4 system prompts x 1000 words (zipf "
                "0.00),\\n32 users x 3 turns of 50 words (answers 50), seed 1\"");
}

TEST_CASE("a long title without a comma breaks at the width", "[plot]") {
  const std::string title(130, 'a');
  auto line = title_line(plot_script({stage(10, 100, 20)}, "out.png", title));
  CHECK(line == "set title \"" + std::string(100, 'a') + "\\n" + std::string(30, 'a') + "\"");
}

TEST_CASE("one data row per stage; TTFT curves only where a stage measured TTFT", "[plot]") {
  auto streamed = plot_script({stage(10, 100, 20), stage(20, 150, 30)}, "out.png", "t");
  CHECK(streamed.find("$data << EOD\n10 100 200 20 40\n20 150 300 30 60\nEOD\n") !=
        std::string::npos);
  CHECK(streamed.find("TTFT p50") != std::string::npos);
  auto whole = plot_script({stage(10, 100, 0)}, "out.png", "t");
  CHECK(whole.find("TTFT") == std::string::npos);
  CHECK(whole.find("end-to-end p99") != std::string::npos);
}
