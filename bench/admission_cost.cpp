// Cost of admission control per request, for bench/admission_cost.sh: one claim (`enter`) and
// one release of a permit, the work every limited request does at the door, with the limit
// never reached (the common case). Under callgrind, only `measured_requests` is counted
// (`--toggle-collect`), so instructions / requests is the cost of the door.
//
//   troupe-admission-cost MODE [REQUESTS]     MODE: cap | rate

#include "services/admission.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

using namespace troupe::services;

namespace {

/// Admits and releases `n` requests one after the other; returns how many were admitted.
__attribute__((noinline)) std::size_t measured_requests(admission_control& door, std::size_t n) {
  std::size_t admitted = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto e = door.enter({});
    admitted += e.permit.held() ? 1 : 0;
    e.permit.release();
  }
  return admitted;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "cap") != 0 && std::strcmp(argv[1], "rate") != 0)) {
    std::fprintf(stderr, "usage: %s cap|rate [REQUESTS]\n", argv[0]);
    return 2;
  }
  std::size_t n = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1000000;
  admission_limits limits;
  limits.max_active = 1024;
  limits.max_queued = 100;
  // A rate high enough never to hold a request back here: the bucket's bookkeeping (a clock
  // read and a refill per admission) is all that is measured.
  limits.rate_per_second = std::strcmp(argv[1], "rate") == 0 ? 1e12 : 0;
  auto door = std::make_shared<admission_control>(limits, [](auto) {});
  measured_requests(*door, 1000); // warm-up
  auto t0 = std::chrono::steady_clock::now();
  auto admitted = measured_requests(*door, n);
  auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0);
  if (admitted != n) {
    std::fprintf(stderr, "only %zu of %zu admitted\n", admitted, n);
    return 1;
  }
  std::printf("%s: %.1f ns/request (claim + release)\n", argv[1], ns.count() / n);
  return 0;
}
