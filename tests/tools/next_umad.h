#pragma once
// The next definition of libibumad's umad_send and umad_recv after the
// preload library that includes this (dlsym RTLD_NEXT): libibumad's own, or
// the next preload's. For the test bed's LD_PRELOAD shims that stand where
// MADs cross libibumad (rmpp.cc, mad_timeouts.cc).
//
// Internal linkage on purpose: each preload library must hold its own copy.
// The function-local static of an inline function is one object across every
// library loaded in the process (a GNU unique symbol), so two shims in one
// process would share the first one's "next" and the second would call
// itself.

#include <dlfcn.h>

namespace ibfabric::testbed::tools {
namespace {  // NOLINT(cert-dcl59-cpp, google-build-namespaces): see above

using UmadSendFn = int (*)(int fd, int agentid, void* umad, int length, int timeout_ms, int retries);
using UmadRecvFn = int (*)(int fd, void* umad, int* length, int timeout_ms);

UmadSendFn NextUmadSend() {
  static const UmadSendFn fn = reinterpret_cast<UmadSendFn>(dlsym(RTLD_NEXT, "umad_send"));
  return fn;
}
UmadRecvFn NextUmadRecv() {
  static const UmadRecvFn fn = reinterpret_cast<UmadRecvFn>(dlsym(RTLD_NEXT, "umad_recv"));
  return fn;
}

}  // namespace
}  // namespace ibfabric::testbed::tools
