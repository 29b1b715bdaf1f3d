// cluster_probe: a stand-in peer (or intruder) for the cluster tests. It links to one troupe
// node's cluster port as CAF does (plain, or TLS with the certificate it is given), says what it
// is told to say, and prints every cluster message it receives as one JSON line, raw bytes
// included, so that a test reads exactly what a peer receives.
//
//   cluster_probe --connect HOST:PORT [--tls-cert C --tls-key K --tls-ca A] [--publish]
//                 [--name NAME] [--hello] [--sync ID=URL]... [--listen SECS]
//
//   --publish     publish this probe on a loopback port first (announced in its hello), so
//                 that the node can dial it back and take it as a member
//   --hello       send a hello (with the published address, if any)
//   --sync ID=URL send a registration record that points worker ID at URL, with a version
//                 newer than any real one
//   --listen S    print what arrives for S seconds (default 2)
//
// Output lines: {"event":"published","port":N}, {"event":"connected","ms":X},
// {"event":"connect_failed","error":"...","ms":X}, {"event":"sent","kind":"..."},
// {"event":"received",...}, {"event":"done"}. Exit code 0 when connected, 1 otherwise.

#include "protocol/cluster_wire.hpp"
#include "protocol/type_ids.hpp"

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace troupe;
using json = nlohmann::json;
using peer_actor = caf::typed_actor<caf::reacts_to<gossip_atom, std::string>>;

std::mutex out_mx;

void emit(const json& j) {
  std::lock_guard guard{out_mx};
  std::cout << j.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

json describe(const std::string& bytes) {
  json j{{"event", "received"}, {"bytes", bytes.size()}, {"raw_hex", hex(bytes)}};
  std::string why;
  auto m = protocol::decode_message(bytes, why);
  if (!m) {
    j["error"] = why;
    return j;
  }
  j["from"] = m->from;
  std::visit(
      [&](auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, protocol::cluster_hello>) {
          j["kind"] = "hello";
          j["cluster_address"] = body.cluster_address;
          j["peers"] = body.peers;
        } else if constexpr (std::is_same_v<T, protocol::registry_sync>) {
          j["kind"] = "sync";
          j["full"] = body.full;
          auto records = json::array();
          for (auto& r : body.records) {
            records.push_back({{"id", r.id},
                               {"url", r.spec.url},
                               {"key", r.spec.api_key},
                               {"key_withheld", r.key_withheld},
                               {"deleted", r.deleted}});
          }
          j["records"] = std::move(records);
        } else if constexpr (std::is_same_v<T, protocol::load_report>) {
          j["kind"] = "load";
        } else {
          j["kind"] = "bye";
        }
      },
      m->body);
  return j;
}

struct config : caf::actor_system_config {
  config() {
    add_message_types<caf::id_block::troupe>();
    load<caf::io::middleman>();
    load<caf::openssl::manager>();
  }
};

struct options {
  std::string host;
  std::uint16_t port = 0;
  bool tls = false;
  bool publish = false;
  bool hello = false;
  std::string name = "probe";
  std::vector<std::pair<std::string, std::string>> syncs;
  double listen = 2;
};

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char** argv) {
  options o;
  caf::actor_system_config::string_list caf_args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--connect") {
      auto v = next();
      auto colon = v.rfind(':');
      o.host = v.substr(0, colon);
      o.port = static_cast<std::uint16_t>(std::stoi(v.substr(colon + 1)));
    } else if (a == "--tls-cert") {
      caf_args.push_back("--openssl.certificate=" + next());
      o.tls = true;
    } else if (a == "--tls-key") {
      caf_args.push_back("--openssl.key=" + next());
    } else if (a == "--tls-ca") {
      caf_args.push_back("--openssl.cafile=" + next());
    } else if (a == "--publish") {
      o.publish = true;
    } else if (a == "--hello") {
      o.hello = true;
    } else if (a == "--name") {
      o.name = next();
    } else if (a == "--sync") {
      auto v = next();
      auto eq = v.find('=');
      o.syncs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--listen") {
      o.listen = std::stod(next());
    } else {
      std::cerr << "cluster_probe: unknown argument " << a << "\n";
      return 2;
    }
  }
  config cfg;
  std::istringstream no_file;
  if (auto err = cfg.parse(caf_args, no_file)) {
    std::cerr << "cluster_probe: " << to_string(err) << "\n";
    return 2;
  }
  caf::actor_system sys{cfg};
  auto recorder = sys.spawn([](peer_actor::pointer) -> peer_actor::behavior_type {
    return {[](gossip_atom, std::string& bytes) { emit(describe(bytes)); }};
  });
  std::string own_address;
  if (o.publish) {
    auto port = o.tls ? caf::openssl::publish(recorder, 0, "127.0.0.1", true)
                      : sys.middleman().publish(recorder, 0, "127.0.0.1", true);
    if (!port) {
      emit({{"event", "publish_failed"}, {"error", sys.render(port.error())}});
      std::_Exit(1);
    }
    own_address = "127.0.0.1:" + std::to_string(*port);
    emit({{"event", "published"}, {"port", *port}});
  }
  auto t0 = std::chrono::steady_clock::now();
  auto node = o.tls ? caf::openssl::remote_actor<peer_actor>(sys, o.host, o.port)
                    : sys.middleman().remote_actor<peer_actor>(o.host, o.port);
  if (!node) {
    emit({{"event", "connect_failed"}, {"error", sys.render(node.error())}, {"ms", ms_since(t0)}});
    std::_Exit(1);
  }
  emit({{"event", "connected"}, {"ms", ms_since(t0)}});
  auto send = [&](protocol::cluster_message m, const char* kind) {
    m.from = o.name;
    m.incarnation = 7;
    caf::send_as(recorder, *node, gossip_atom_v, protocol::encode(m));
    emit({{"event", "sent"}, {"kind", kind}});
  };
  if (o.hello) {
    protocol::cluster_message m;
    m.body = protocol::cluster_hello{"127.0.0.1:1", own_address, {}};
    send(std::move(m), "hello");
  }
  for (auto& [id, url] : o.syncs) {
    protocol::worker_record r;
    r.id = id;
    r.spec.url = url;
    r.models = {"sim-model"};
    r.version = std::uint64_t{1} << 62; // newer than any clock
    r.origin = o.name;
    protocol::cluster_message m;
    m.body = protocol::registry_sync{false, {r}};
    send(std::move(m), "sync");
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(o.listen));
  emit({{"event", "done"}});
  std::cout.flush();
  std::_Exit(0); // the actor system of an intruder need not shut down cleanly
}
