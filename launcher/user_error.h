// Propagation macros for horarun's user-facing errors. Unlike HORA_RETURN_IF_ERROR they pass
// the Status on unchanged: horarun prints a bad invocation as one line ("horarun: -np 0: ..."),
// and a source location in it would only confuse the user.
#pragma once

#include "hora/status.h"

#define HORARUN_RETURN_IF_ERROR(expr)                  \
  do {                                                 \
    ::hora::Status horarun_status_ = (expr);           \
    if (!horarun_status_.ok()) return horarun_status_; \
  } while (0)

#define HORARUN_ASSIGN_OR_RETURN(decl, expr) \
  HORARUN_ASSIGN_OR_RETURN_IMPL(HORA_STATUS_CONCAT(horarun_statusor_, __LINE__), decl, expr)
#define HORARUN_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  decl = std::move(tmp).value()
