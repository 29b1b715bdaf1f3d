#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace troupe::actors {

/// The prefix of a prompt as a chain of block hashes, the form in which cluster nodes tell each
/// other what a worker holds (docs/cluster.md, "Shared prefix view"): the prompt is cut into
/// whole blocks of `block_bytes` from its start, and block i's hash covers blocks 0..i (each
/// hash seeds the next), so two prompts share hash i exactly when they share their first
/// i + 1 blocks. A trailing partial block is left out. The function is fixed (XXH3, seeded by
/// the block size): every node, and every build, maps a prompt to the same chain.
void prefix_block_hashes(std::string_view text, std::size_t block_bytes,
                         std::vector<std::uint64_t>& out);

} // namespace troupe::actors
