// Store authentication: the HMAC-SHA256 challenge-response that proves a client knows the job
// secret (HORA_SECRET) before the TcpStoreServer lets it read or write any key.
// Pure functions over OpenSSL's libcrypto; thread-safe.
#pragma once

#include <string>

#include "collectives/rendezvous/store.h"

namespace hora {
namespace collectives {

constexpr size_t kAuthNonceBytes = 32;
constexpr size_t kAuthProofBytes = 32;

// A fresh random nonce (RAND_bytes).
StatusOr<Bytes> make_auth_nonce();
// HMAC-SHA256(secret, nonce || "hora-store-v1").
Bytes auth_proof(const std::string& secret, const Bytes& nonce);
// Constant-time comparison of a received proof with the expected one.
bool auth_proof_matches(const std::string& secret, const Bytes& nonce, const Bytes& proof);

}  // namespace collectives
}  // namespace hora
