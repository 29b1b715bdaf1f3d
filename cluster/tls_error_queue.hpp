#pragma once

namespace troupe::cluster {

/// A guard on the OpenSSL calls CAF's OpenSSL module makes for cluster links.
///
/// OpenSSL keeps one error queue per thread, and `SSL_get_error` reads it: the queue must be
/// empty before each TLS read, write or handshake, or a leftover error is taken for this call's.
/// CAF 0.17.6 never empties it, and runs every TLS connection on one thread: a handshake that
/// fails (a client without a certificate, one from another CA, a port scanner) leaves an error
/// behind, and the next read on a healthy link between members fails with it, closing that link
/// (measured: a peer with a rogue certificate dialing every second kept two members' link
/// down). troupe defines `SSL_read`, `SSL_write`, `SSL_accept` and `SSL_connect` itself
/// (tls_error_queue.cpp): each empties the calling thread's queue and calls OpenSSL's own, as
/// OpenSSL's documentation asks of every caller (Boost.Asio's TLS streams do the same).
/// Returns true when those calls resolve to the guard in this process.
bool tls_error_queue_guard_active() noexcept;

} // namespace troupe::cluster
