#include "apps/troupe-bench/plot.hpp"

#include <cstdio>
#include <sstream>
#include <sys/wait.h>

namespace troupe::bench {

namespace {

// gnuplot takes a double-quoted string with backslash escapes.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out + "\"";
}

} // namespace

std::string plot_script(const std::vector<stage_summary>& stages, const std::string& png_path,
                        const std::string& title) {
  bool has_ttft = false;
  for (const auto& s : stages) {
    has_ttft = has_ttft || s.ttft.count > 0;
  }
  std::ostringstream out;
  out << "set terminal pngcairo size 1000,640 noenhanced\n"
      << "set output " << quoted(png_path) << "\n"
      << "set title " << quoted(title) << "\n"
      << "set xlabel \"throughput (successful requests/s)\"\n"
      << "set ylabel \"latency (ms)\"\n"
      << "set grid\nset key top left\nset yrange [0:*]\nset xrange [0:*]\n"
      << "set offsets 0, graph 0.05, graph 0.1, 0\n"
      << "$data << EOD\n";
  for (const auto& s : stages) {
    out << s.request_rate << " " << s.e2e.p50 << " " << s.e2e.p99 << " " << s.ttft.p50 << " "
        << s.ttft.p99 << "\n";
  }
  out << "EOD\n"
      << "plot $data using 1:2 with linespoints lw 2 title \"end-to-end p50\", \\\n"
      << "     $data using 1:3 with linespoints lw 2 dt 2 title \"end-to-end p99\"";
  if (has_ttft) {
    out << ", \\\n     $data using 1:4 with linespoints lw 2 title \"TTFT p50\", \\\n"
        << "     $data using 1:5 with linespoints lw 2 dt 2 title \"TTFT p99\"";
  }
  out << "\n";
  return out.str();
}

std::optional<std::string> draw_plot(const std::string& script) {
  FILE* gp = ::popen("gnuplot 2>&1", "w");
  if (!gp) {
    return std::string("cannot run gnuplot");
  }
  std::fwrite(script.data(), 1, script.size(), gp);
  const int status = ::pclose(gp);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return std::string(WIFEXITED(status) && WEXITSTATUS(status) == 127
                           ? "gnuplot is not installed (scripts/install-deps.sh installs it)"
                           : "gnuplot failed");
  }
  return std::nullopt;
}

} // namespace troupe::bench
