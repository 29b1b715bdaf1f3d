#include "apps/troupe-bench/plot.hpp"

#include <cstdio>
#include <sstream>
#include <string_view>
#include <sys/wait.h>

namespace troupe::bench {

namespace {

// gnuplot takes a double-quoted string with backslash escapes (`\n` breaks a line).
std::string gnuplot_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') {
      out.push_back('\\');
    }
    out.push_back(c);
  }
  return out + "\"";
}

// The title's lines: the 1000-pixel plot holds ~100 characters of title, so a longer one
// breaks after a ", " (a workload's description is a list of such parts), or where it must.
std::vector<std::string> title_lines(const std::string& title) {
  constexpr std::size_t width = 100;
  std::vector<std::string> lines;
  std::string_view rest = title;
  while (rest.size() > width) {
    auto cut = rest.rfind(", ", width - 1);
    std::size_t next = cut + 2;
    if (cut == std::string_view::npos || cut == 0) {
      cut = width;
      next = width;
    } else {
      cut += 1; // the comma ends the line
    }
    lines.emplace_back(rest.substr(0, cut));
    rest.remove_prefix(next);
  }
  lines.emplace_back(rest);
  return lines;
}

// The title as one gnuplot string, broken into the lines the plot can hold.
std::string quoted_title(const std::string& title) {
  std::string joined;
  for (const auto& line : title_lines(title)) {
    joined += (joined.empty() ? "" : "\n") + line;
  }
  return gnuplot_quoted(joined);
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
      << "set output " << gnuplot_quoted(png_path) << "\n"
      << "set title " << quoted_title(title) << "\n"
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
