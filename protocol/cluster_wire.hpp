#pragma once

// What gateway nodes tell each other, and what a node writes to its state file. Everything is
// msgpack: maps keyed by short field names, so a reader skips the fields it does not know and
// keeps defaults for the ones it misses. Nodes of adjacent versions therefore interoperate
// during a rolling upgrade; a change that old readers cannot survive raises
// `cluster_wire_compat`, and older readers then drop such messages with a clear reason.

#include "protocol/worker.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace troupe::protocol {

/// The wire version this build writes.
inline constexpr std::uint32_t cluster_wire_version = 1;

/// The oldest wire version whose readers understand what this build writes. Raised only by a
/// change that is not additive (a field whose meaning changed, a message old readers misread).
inline constexpr std::uint32_t cluster_wire_compat = 1;

/// One worker registration as the cluster replicates it. Last writer wins by
/// (`version`, `origin`); a deleted worker stays as a tombstone so that a late copy of the live
/// record cannot bring it back.
struct worker_record {
  std::string id;                  ///< Registry id (the same on every node).
  worker_spec spec;                ///< As registered; the api key travels only over TLS links.
  std::vector<std::string> models; ///< The model card: ids the worker serves, once discovered.
  std::uint64_t version = 0;       ///< Hybrid logical clock of the write (see `next_version`).
  std::string origin;              ///< Node that wrote this version.
  bool deleted = false;            ///< A tombstone.
  std::int64_t stamp_ms = 0;       ///< Wall clock of the write on `origin` (ms since epoch).
  std::int64_t registered_ms = 0;  ///< When the worker was first registered (ms since epoch).
  /// The worker has an api key its sender did not send (a link without TLS carries no
  /// secret): the receiver uses a key it was given itself, or serves the worker without one.
  bool key_withheld = false;

  friend bool operator==(const worker_record&, const worker_record&) = default;
};

/// True when `a` replaces `b`: a higher version, or the same version from a greater node name,
/// or (same version and origin, different content) the greater `record_hash`.
bool supersedes(const worker_record& a, const worker_record& b) noexcept;

/// The version of a new write: the wall clock in ms, or one more than the highest version seen
/// when that is later (a clock behind its peers still orders writes after what it saw).
std::uint64_t next_version(std::uint64_t highest_seen, std::int64_t now_ms) noexcept;

/// A hash of the whole record as it is replicated (every field but the api key, which only TLS
/// links carry). XOR-ed over all records it gives a registry digest that does not depend on
/// order: two nodes holding the same records have the same digest, and records that differ in
/// anything but the key (a model card, a spec) make digests differ.
std::uint64_t record_hash(const worker_record& r) noexcept;

/// A member's greeting, sent to each peer when a link comes up.
struct cluster_hello {
  std::string api_address;        ///< Where clients reach the sender's API (host:port).
  std::string cluster_address;    ///< Where peers reach the sender's cluster port (host:port).
  std::vector<std::string> peers; ///< Cluster addresses of the members the sender knows.
  /// The sender confirms the writes it receives (`cluster_ack`): a node waits for such a
  /// peer's confirmation before it answers a registration. False from older senders.
  bool acks = false;
  bool deltas = false; ///< The sender reads load deltas (`load_report::full` false).
  /// The block size of the sender's shared prefix view (`prefix_update`); 0: it has none (or
  /// predates it), so it is sent no prefix updates. Written only when set.
  std::uint32_t prefix_block_bytes = 0;
  /// The sender asks for the receiver's hello even if the receiver counts this link as verified
  /// already: the sender dialed the receiver and has not heard its hello, or lost the link while
  /// the receiver kept its own. A receiver that has this link as the sender's verified one
  /// greets it again (hello, whole load report, whole registry). Older receivers ignore it.
  bool again = false;
  /// The sender reads `response_update`s (docs/cluster.md, "Responses affinity"): only such
  /// members are sent them. Written only when set.
  bool responses = false;
  /// The sender answers `placement_ask`s (docs/cluster.md, "Placement by owner"): it may be
  /// the owner of a prefix group, and only such members are asked. Written only when set.
  bool placement = false;
};

/// Registry records: the sender's whole state (`full`, on a new link or when digests differ),
/// or the writes it just made.
struct registry_sync {
  bool full = false;
  std::vector<worker_record> records;
  /// Numbers the sender's whole-registry syncs: the parts of one sync (a registry larger than a
  /// message is sent in several) share it. 0: not given (older senders, deltas).
  std::uint64_t sync_id = 0;
};

/// The sender's load: requests it has in flight per worker. A whole report (`full`) lists every
/// worker above zero and replaces what the sender said before; a delta lists only the workers
/// whose count changed since the report numbered `seq - 1` (a count of 0: none any more).
/// Deltas go, once per gossip interval at most, to members whose hello says they read them;
/// a new link gets a whole report first. Older senders write no `full`: their reports are whole.
struct load_report {
  std::uint64_t seq = 0;                                   ///< Increases per report.
  std::vector<std::pair<std::string, std::int32_t>> loads; ///< (worker id, in flight).
  std::uint64_t registry_digest = 0;                       ///< The sender's registry digest.
  std::uint64_t registry_version = 0; ///< The sender's snapshot version (a local counter).
  std::uint32_t workers = 0;          ///< Live workers the sender knows.
  std::uint64_t shared_version = 0;   ///< The sender's highest record version.
  bool full = true;                   ///< A whole report (else a delta on `seq - 1`).
  /// Members whose deltas the sender could not apply (one was missed): each sends it a whole
  /// report.
  std::vector<std::string> resend;
};

/// The prefix blocks one worker was sent (chained block hashes, `actors::prefix_block_hashes`),
/// in the order the sender recorded them: within one prompt its deepest block first.
struct prefix_blocks {
  std::string worker;                ///< Worker id (the same on every node).
  std::vector<std::uint64_t> hashes; ///< On the wire: one binary string, 8 bytes each.
};

/// The shared prefix view (docs/cluster.md): what the sender's cache-aware picks recorded per
/// worker since its last update, coalesced per gossip tick. Hashes only: no prompt text leaves
/// a node. Sent only to members whose hello named the same `prefix_block_bytes`.
struct prefix_update {
  std::uint32_t block_bytes = 0;      ///< The sender's block size (receivers check it is theirs).
  std::vector<prefix_blocks> workers; ///< One entry per worker.
  /// The role of the policy whose picks these are (`regular`, `prefill`, `decode`): a receiver
  /// hands it only to its policy of that role. Empty (older senders): to every policy. Written
  /// only when set.
  std::string role;
  /// A snapshot of the sender's recent placements for a member that just linked, not the
  /// picks of one tick (docs/cluster.md, "A node that joins late"). Written only when set.
  bool snapshot = false;
};

/// Responses API objects this node's relays saw created (or found by searching), and the worker
/// that stores each: a member receiving a request that names one sends it there without
/// searching. Ids and worker ids only. The msgpack form: protocol/response_wire.hpp.
struct response_update {
  std::vector<std::pair<std::string, std::string>> responses; ///< (response id, worker id).
  /// A snapshot of what the sender knows for a member that just linked, not the ids of one
  /// tick (docs/cluster.md, "A node that joins late"). Written only when set.
  bool snapshot = false;
};

/// A pick asks the owner of its prompt's prefix group where to send it (docs/cluster.md,
/// "Placement by owner"). Hashes and worker ids only: the prompt never leaves its node.
struct placement_ask {
  std::uint64_t id = 0;                ///< Numbers the sender's asks; the answer repeats it.
  std::string role;                    ///< The role of the asking policy (`regular`, ...).
  std::uint32_t block_bytes = 0;       ///< The sender's block size (the chain's).
  std::uint64_t head = 0;              ///< The prompt's rank seed (its first 512 bytes' hash).
  std::uint64_t prompt_bytes = 0;      ///< The prompt's length (what a match is weighed against).
  std::vector<std::uint64_t> chain;    ///< The prompt's chained block hashes, first block first.
  std::vector<std::string> candidates; ///< Eligible workers the asker may send it to.
  /// Not on the wire: the member asked (between a policy and its cluster node).
  std::string owner;
};

/// The owner's answer to a `placement_ask`: the worker it chose (and recorded in its view, so
/// the next asker hears the same), or none (it could not decide: the asker decides itself).
struct placement_answer {
  std::uint64_t id = 0;
  std::string worker; ///< Empty: no decision.
};

/// The sender leaves the cluster (graceful shutdown): peers drop it at once.
struct cluster_bye {};

/// The sender holds these records now (it merged the write they came with): the writer's
/// registration is durable beyond the writer. Sent for delta syncs only, to the node that sent
/// them.
struct cluster_ack {
  std::vector<std::pair<std::string, std::uint64_t>> records; ///< (worker id, version).
};

/// One message between nodes: an envelope naming the sender, and one body.
struct cluster_message {
  std::uint32_t version = cluster_wire_version; ///< Wire version of the writer.
  std::uint32_t compat = cluster_wire_compat;   ///< Oldest wire version that can read it.
  std::string from;                             ///< Sender's node name.
  std::uint64_t incarnation = 0; ///< Random per process start: tells a restarted node apart.
  std::int64_t sent_ms = 0;      ///< Sender's wall clock.
  std::variant<cluster_hello, registry_sync, load_report, cluster_bye, cluster_ack, prefix_update,
               response_update, placement_ask, placement_answer>
      body;
};

/// The message as msgpack bytes.
std::string encode(const cluster_message& m);

/// Reads a message. Unknown fields are skipped and missing ones keep their defaults; a
/// malformed payload, an unknown body kind or a `compat` above `cluster_wire_version` returns
/// nothing and sets `why`. What the bytes may claim is bounded by their size (no array, map or
/// string longer than the input, nesting at most 32 deep), so a small message cannot make the
/// reader allocate much more than itself.
std::optional<cluster_message> decode_message(std::string_view bytes, std::string& why);

/// Bytes `u` takes as a message body, within a few bytes (what a sender counts against its
/// budget per tick).
std::size_t encoded_size(const prefix_update& u) noexcept;

/// The records of `sync` in groups whose encoded messages (envelope `from` and all) stay within
/// `max_bytes`, in order; a record too large to fit any message on its own is left out and
/// named in `too_large` (its id).
std::vector<std::vector<worker_record>> split_records(std::vector<worker_record> records,
                                                      std::size_t max_bytes,
                                                      std::vector<std::string>& too_large);

/// What a node persists: its registry's records (tombstones included).
struct registry_file {
  std::uint32_t version = cluster_wire_version; ///< Wire version of the writer.
  std::string node;                             ///< Node that wrote the file.
  std::int64_t saved_ms = 0;                    ///< When it was written.
  std::vector<worker_record> records;
};

/// The state file's bytes.
std::string encode(const registry_file& f);

/// Reads a state file (same compatibility rules as messages).
std::optional<registry_file> decode_registry_file(std::string_view bytes, std::string& why);

} // namespace troupe::protocol
