#include "serve/http/port_probe.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace moe::serve::http {

void set_listen_socket_options(int fd) {
  int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

void require_bindable(const std::string& host, int port) {
  if (port == 0) return;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
  if (rc != 0) throw Error(str("cannot listen on ", host, ":", port, ": ", gai_strerror(rc)));
  std::string reason = "no address";
  bool bound = false;
  for (addrinfo* ai = found; ai && !bound; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) {
      reason = std::strerror(errno);
      continue;
    }
    set_listen_socket_options(fd);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 1) == 0)
      bound = true;
    else
      reason = std::strerror(errno);
    close(fd);
  }
  freeaddrinfo(found);
  if (!bound) throw Error(str("cannot listen on ", host, ":", port, ": ", reason));
}

}  // namespace moe::serve::http
