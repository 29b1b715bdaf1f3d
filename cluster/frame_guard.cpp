#include "cluster/frame_guard.hpp"

#include <atomic>
#include <caf/atom.hpp>
#include <caf/io/basp/header.hpp>
#include <dlfcn.h>

namespace troupe::cluster {

namespace {

// Process-wide by necessity: CAF calls a free function with a fixed signature, so the limit
// cannot be handed to it. Written once at start-up, read on CAF's network thread.
std::atomic<std::uint32_t> limit{UINT32_MAX};
std::atomic<std::uint64_t> refused_large{0};
std::atomic<std::uint64_t> refused_routed{0};
std::atomic<std::uint64_t> refused_named{0};

/// libcaf_io's `caf::io::basp::valid` (the mangled name of the function defined below).
constexpr const char* valid_symbol = "_ZN3caf2io4basp5validERKNS1_6headerE";

using valid_fn = bool (*)(const caf::io::basp::header&);

valid_fn cafs_valid() {
  static const auto fn = reinterpret_cast<valid_fn>(::dlsym(RTLD_NEXT, valid_symbol));
  return fn;
}

} // namespace

void set_frame_limit(std::uint32_t max_payload_bytes) noexcept {
  limit.store(max_payload_bytes, std::memory_order_relaxed);
  cafs_valid(); // looked up now, not on CAF's network thread
}

std::uint32_t frame_limit() noexcept {
  return limit.load(std::memory_order_relaxed);
}

bool frame_guard_active() noexcept {
  auto resolved = ::dlsym(RTLD_DEFAULT, valid_symbol);
  return resolved != nullptr &&
         resolved == reinterpret_cast<void*>(static_cast<valid_fn>(&caf::io::basp::valid)) &&
         cafs_valid() != nullptr;
}

frames_refused frame_refusals() noexcept {
  return {refused_large.load(std::memory_order_relaxed),
          refused_routed.load(std::memory_order_relaxed),
          refused_named.load(std::memory_order_relaxed)};
}

} // namespace troupe::cluster

// CAF's header check, replaced (see frame_guard.hpp). Runs on CAF's multiplexer thread for every
// header read: no allocation, no logging, no exception.
bool caf::io::basp::valid(const caf::io::basp::header& hdr) {
  using namespace troupe::cluster;
  if (hdr.payload_len > limit.load(std::memory_order_relaxed)) {
    refused_large.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (hdr.operation == message_type::routed_message) {
    refused_routed.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  if (hdr.operation == message_type::direct_message && hdr.has(header::named_receiver_flag) &&
      hdr.dest_actor != static_cast<std::uint64_t>(caf::atom("SpawnServ"))) {
    refused_named.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  auto original = cafs_valid();
  return original != nullptr && original(hdr);
}
