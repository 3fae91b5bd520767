#pragma once
// Whether the server's address can be bound, asked before the model loads: a second server on a port in use
// should fail in a moment, not after minutes of loading a checkpoint (sglang checks its port the same way).
#include <string>

namespace moe::serve::http {

// Throws moe::Error naming host:port and the system's reason when no address of `host` (a name or a
// numeric address, IPv4 or IPv6) can be bound at `port` with the options HttpServer listens with. Port 0
// (any free port) always passes. The probe socket is closed again: the server binds for real later, so a
// port taken in between still fails there.
void require_bindable(const std::string& host, int port);

// The options the server's listening socket gets before it binds, and the probe's socket too, so the two
// agree: SO_REUSEADDR only (a port in TIME_WAIT can be taken again). httplib's default adds SO_REUSEPORT,
// which let a second server start on a port in use and take half of its connections.
void set_listen_socket_options(int fd);

}  // namespace moe::serve::http
