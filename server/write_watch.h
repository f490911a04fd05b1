// Whether a client still takes what the server writes to it. The write timeout closes a
// connection whose client took none of a pending write for that long. It cannot be a
// deadline over each write: Linux wakes a writer blocked on a full send buffer only when
// about a third of it is free, and autotuning grows that buffer to 4 MiB, so a slow but
// steady reader (n choices with logprobs over a slow link) would be cut while it reads.
// Progress is read from the kernel's send queue instead (SIOCOUTQ, bytes the client has
// not yet acknowledged), as well as from writes completing, once a timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

namespace tandem::server {

class WriteWatch {
 public:
  explicit WriteWatch(const boost::asio::any_io_executor& executor) : timer_(executor) {}

  // A write begins on `socket`: unless a check is already due, `tick` runs after `timeout`
  // on the timer's executor. It may run after the watch is destroyed, so it must find its
  // owner through a weak pointer, and then call fired() first.
  void arm(boost::asio::ip::tcp::socket& socket, std::chrono::milliseconds timeout,
           std::function<void()> tick);
  void fired() { armed_ = false; }
  // A write completed.
  void wrote() { ++writes_; }
  // Whether the client took anything, or a write completed, since arm() or the last call.
  bool progressed(boost::asio::ip::tcp::socket& socket);

 private:
  boost::asio::steady_timer timer_;
  bool armed_ = false;
  uint64_t writes_ = 0, seen_writes_ = 0;
  int64_t seen_queue_ = -1;
};

}  // namespace tandem::server
