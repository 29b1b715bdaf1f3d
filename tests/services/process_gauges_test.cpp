#include "services/metrics.hpp"
#include "services/process_gauges.hpp"
#include "tests/fakes/scrape.hpp"

#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <vector>

using namespace troupe::services;
using troupe::test::sample;

namespace {

// A stat line as Linux 6.1 writes it: the command name holds a space and both parentheses.
constexpr std::string_view stat_line =
    "4242 (io thread) (x)) S 1 4242 4242 0 -1 4194560 1200 0 3 0 250 125 0 0 20 0 7 0 "
    "5000 1073741824 2048 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";

} // namespace

TEST_CASE("a /proc stat line gives the process series in seconds and bytes") {
  auto s = parse_proc_stat(stat_line, 100, 4096, 1'700'000'000);
  REQUIRE(s);
  CHECK(s->cpu_seconds == Approx(3.75)); // (250 + 125) ticks at 100 a second
  CHECK(s->threads == 7);
  CHECK(s->start_time_seconds == Approx(1'700'000'050.0)); // boot + 5000 ticks
  CHECK(s->virtual_bytes == 1073741824.0);
  CHECK(s->resident_bytes == 2048.0 * 4096);
}

TEST_CASE("a stat line cut short or with a field that is no number gives nothing") {
  CHECK_FALSE(parse_proc_stat("", 100, 4096, 0));
  CHECK_FALSE(parse_proc_stat("4242 (name S 1 2 3", 100, 4096, 0));
  CHECK_FALSE(parse_proc_stat(stat_line.substr(0, stat_line.find(" 2048")), 100, 4096, 0));
  std::string bad{stat_line};
  bad.replace(bad.find(" 250 "), 5, " 2x0 ");
  CHECK_FALSE(parse_proc_stat(bad, 100, 4096, 0));
  CHECK_FALSE(parse_proc_stat(stat_line, 0, 4096, 0));
}

TEST_CASE("the boot time is the btime line of /proc/stat") {
  CHECK(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1764000000\nprocesses 9\n") == 1764000000.0);
  CHECK(parse_boot_time("btime 17\n") == 17.0);
  CHECK_FALSE(parse_boot_time("cpu 1 2\nbtimes 5\n"));
  CHECK_FALSE(parse_boot_time("btime soon\n"));
  CHECK_FALSE(parse_boot_time(""));
}

TEST_CASE("open descriptors are counted as they open and close") {
  auto before = count_open_fds();
  REQUIRE(before);
  std::vector<int> fds;
  for (int i = 0; i < 5; ++i) {
    fds.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    REQUIRE(fds.back() >= 0);
  }
  CHECK(count_open_fds() == *before + 5);
  for (int fd : fds) {
    ::close(fd);
  }
  CHECK(count_open_fds() == before);
}

TEST_CASE("a scrape carries this process's series") {
  metrics m;
  auto text = m.scrape();
  auto fds = count_open_fds();
  REQUIRE(fds);
  // The scrape's own read of /proc/self/fd is left out of the count.
  CHECK(sample(text, "process_open_fds") == static_cast<double>(*fds));
  rlimit lim{};
  REQUIRE(::getrlimit(RLIMIT_NOFILE, &lim) == 0);
  CHECK(sample(text, "process_max_fds") == static_cast<double>(lim.rlim_cur));
  CHECK(sample(text, "process_resident_memory_bytes") > 1'000'000);
  CHECK(sample(text, "process_virtual_memory_bytes") >=
        sample(text, "process_resident_memory_bytes"));
  CHECK(sample(text, "process_threads") >= 1);
  CHECK(sample(text, "process_cpu_seconds_total") >= 0);
  auto start = sample(text, "process_start_time_seconds");
  auto now = static_cast<double>(::time(nullptr));
  CHECK(start > now - 24 * 3600.0); // a test process started within the day
  CHECK(start <= now + 1);
  CHECK(text.find("# TYPE process_cpu_seconds_total counter") != std::string::npos);
  CHECK(text.find("# TYPE process_open_fds gauge") != std::string::npos);
}
