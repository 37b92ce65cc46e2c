#include "collectives/rendezvous/store_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace hora {
namespace collectives {
namespace {
constexpr char kTag[] = "hora-store-v1";
}  // namespace

StatusOr<Bytes> make_auth_nonce() {
  Bytes nonce(kAuthNonceBytes);
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1)
    return Status::internal("RAND_bytes failed to produce a store nonce");
  return nonce;
}

Bytes auth_proof(const std::string& secret, const Bytes& nonce) {
  Bytes message = nonce;
  message.insert(message.end(), kTag, kTag + sizeof(kTag) - 1);
  Bytes proof(EVP_MAX_MD_SIZE);
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), message.data(), message.size(),
       proof.data(), &length);
  proof.resize(length);
  return proof;
}

bool auth_proof_matches(const std::string& secret, const Bytes& nonce, const Bytes& proof) {
  const Bytes expected = auth_proof(secret, nonce);
  return proof.size() == expected.size() &&
         CRYPTO_memcmp(proof.data(), expected.data(), expected.size()) == 0;
}

}  // namespace collectives
}  // namespace hora
