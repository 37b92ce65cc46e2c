#include "collectives/backends/gloo/gloo_errors.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace hora {
namespace collectives {
namespace gloo_backend {
namespace {

bool mentions_timeout(std::string message) {
  std::transform(message.begin(), message.end(), message.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return message.find("timed out") != std::string::npos ||
         message.find("timeout") != std::string::npos;
}

}  // namespace

Status gloo_error(const std::string& what, GlooErrorKind kind, const std::string& message) {
  const std::string text = "gloo: " + what + ": " + message;
  if (mentions_timeout(message))
    return Status::timeout(text + " (HORA_TIMEOUT_S bounds every wait on a peer)");
  switch (kind) {
    case GlooErrorKind::kIo: return Status::remote(text + " (a peer failed or left)");
    case GlooErrorKind::kOther: return Status::io(text);
    case GlooErrorKind::kUnknown: break;
  }
  return Status::internal(text);
}

Status current_exception_status(const std::string& what) noexcept {
  try {
    throw;
  } catch (const ::gloo::IoException& e) {
    return gloo_error(what, GlooErrorKind::kIo, e.what());
  } catch (const ::gloo::Exception& e) {
    return gloo_error(what, GlooErrorKind::kOther, e.what());
  } catch (const ::gloo::EnforceNotMet& e) {
    return gloo_error(what, GlooErrorKind::kUnknown, e.what());
  } catch (const std::exception& e) {
    return gloo_error(what, GlooErrorKind::kUnknown, e.what());
  } catch (...) {
    return gloo_error(what, GlooErrorKind::kUnknown, "unknown exception");
  }
}

}  // namespace gloo_backend
}  // namespace collectives
}  // namespace hora
