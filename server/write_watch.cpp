#include "server/write_watch.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>

namespace tandem::server {
namespace {

// Bytes written to the socket that the client has not acknowledged; -1 if unknown.
int64_t send_queue(boost::asio::ip::tcp::socket& socket) {
  int queued = 0;
  if (!socket.is_open() || ::ioctl(socket.native_handle(), SIOCOUTQ, &queued) != 0) return -1;
  return queued;
}

}  // namespace

void WriteWatch::arm(boost::asio::ip::tcp::socket& socket, std::chrono::milliseconds timeout,
                     std::function<void()> tick) {
  if (armed_) return;
  armed_ = true;
  seen_writes_ = writes_;
  seen_queue_ = send_queue(socket);
  timer_.expires_after(timeout);
  timer_.async_wait([tick = std::move(tick)](boost::system::error_code ec) {
    if (!ec) tick();  // else cancelled: the watch is being destroyed
  });
}

bool WriteWatch::progressed(boost::asio::ip::tcp::socket& socket) {
  const int64_t queue = send_queue(socket);
  // Unknown queue sizes (not Linux, or a closed socket) leave the completed writes.
  const bool moved = writes_ != seen_writes_ || (queue >= 0 && queue != seen_queue_);
  seen_writes_ = writes_;
  seen_queue_ = queue;
  return moved;
}

}  // namespace tandem::server
