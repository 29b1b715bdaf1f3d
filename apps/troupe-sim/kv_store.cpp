#include "apps/troupe-sim/kv_store.hpp"

namespace troupe::sim {

namespace {

using clock = std::chrono::steady_clock;

kv_read_result refuse(unsigned status, std::string detail) {
  return {status, 0, std::move(detail)};
}

} // namespace

kv_store::kv_store(net::io_context& ioc, std::string engine_id)
    : engine_id_(std::move(engine_id)), timer_(ioc) {}

kv_store::~kv_store() = default;

std::vector<std::uint64_t> kv_store::pin(const std::vector<std::uint64_t>& keys,
                                         std::optional<std::string> transfer_id,
                                         std::chrono::milliseconds hold) {
  if (keys.empty()) {
    return {};
  }
  const auto pin = next_pin_++;
  pin_entry entry;
  entry.expires = clock::now() + hold;
  for (auto key : keys) {
    const auto id = next_block_++;
    blocks_.emplace(id, block{key, pin});
    entry.ids.push_back(id);
  }
  if (transfer_id) {
    if (auto old = transfers_.find(*transfer_id); old != transfers_.end()) {
      forget_pin(old->second); // a transfer id names one prefill: the latest
    }
    transfers_[*transfer_id] = pin;
  }
  entry.transfer_id = std::move(transfer_id);
  auto ids = entry.ids;
  expiries_.emplace(entry.expires, pin);
  pins_.emplace(pin, std::move(entry));
  ++counters_.pins;
  arm();
  return ids;
}

kv_read_result kv_store::read(const std::string& engine_id, const std::vector<std::uint64_t>& ids,
                              const std::vector<std::uint64_t>& keys) {
  if (engine_id != engine_id_) {
    ++counters_.refused_reads;
    return refuse(409,
                  "engine '" + engine_id + "' is not this prefill worker's ('" + engine_id_ + "')");
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    auto it = blocks_.find(ids[i]);
    if (it == blocks_.end()) {
      ++counters_.refused_reads;
      return refuse(404, "block " + std::to_string(ids[i]) +
                             " is not pinned (never pinned, already read, or expired)");
    }
    if (i >= keys.size() || it->second.key != keys[i]) {
      ++counters_.refused_reads;
      return refuse(422, "block " + std::to_string(ids[i]) + " holds another prompt");
    }
  }
  for (auto id : ids) {
    release(id);
  }
  counters_.sent_blocks += ids.size();
  return {200, ids.size(), {}};
}

kv_read_result kv_store::read_transfer(const std::string& engine_id, const std::string& transfer_id,
                                       const std::vector<std::uint64_t>& keys) {
  auto it = transfers_.find(transfer_id);
  if (engine_id != engine_id_) {
    ++counters_.refused_reads;
    return refuse(409,
                  "engine '" + engine_id + "' is not this prefill worker's ('" + engine_id_ + "')");
  }
  if (it == transfers_.end()) {
    ++counters_.refused_reads;
    return refuse(404, "transfer '" + transfer_id +
                           "' is not pinned (never pinned, already read, or expired)");
  }
  const auto ids = pins_.at(it->second).ids;
  std::vector<std::uint64_t> held;
  for (auto id : ids) {
    held.push_back(blocks_.at(id).key);
  }
  if (held != keys) {
    ++counters_.refused_reads;
    return refuse(422, "transfer '" + transfer_id + "' holds another prompt");
  }
  for (auto id : ids) {
    release(id);
  }
  counters_.sent_blocks += ids.size();
  return {200, ids.size(), {}};
}

void kv_store::release(std::uint64_t block_id) {
  auto it = blocks_.find(block_id);
  if (it == blocks_.end()) {
    return;
  }
  const auto pin = it->second.pin;
  blocks_.erase(it);
  auto p = pins_.find(pin);
  if (p == pins_.end()) {
    return;
  }
  std::erase(p->second.ids, block_id);
  if (p->second.ids.empty()) {
    forget_pin(pin);
  }
}

void kv_store::forget_pin(std::uint64_t pin) {
  auto p = pins_.find(pin);
  if (p == pins_.end()) {
    return;
  }
  for (auto id : p->second.ids) {
    blocks_.erase(id);
  }
  if (p->second.transfer_id) {
    if (auto t = transfers_.find(*p->second.transfer_id);
        t != transfers_.end() && t->second == pin) {
      transfers_.erase(t);
    }
  }
  pins_.erase(p);
}

void kv_store::arm() {
  // Entries of pins already read are dropped lazily here, so the schedule stays small.
  while (!expiries_.empty() && !pins_.contains(expiries_.begin()->second)) {
    expiries_.erase(expiries_.begin());
  }
  if (expiries_.empty()) {
    timer_.cancel();
    return;
  }
  timer_.expires_at(expiries_.begin()->first);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) {
      expire();
    }
  });
}

void kv_store::expire() {
  const auto now = clock::now();
  while (!expiries_.empty() && expiries_.begin()->first <= now) {
    const auto pin = expiries_.begin()->second;
    expiries_.erase(expiries_.begin());
    if (auto p = pins_.find(pin); p != pins_.end()) {
      counters_.expired_blocks += p->second.ids.size();
      forget_pin(pin);
    }
  }
  arm();
}

} // namespace troupe::sim
