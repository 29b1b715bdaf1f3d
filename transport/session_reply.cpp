#include "transport/session_reply.hpp"

#include "transport/dispatch_inline.hpp"

namespace troupe::transport {

template <class F> void session_reply::on_strand(F&& f) {
  auto t = target_.lock();
  if (!t) {
    return;
  }
  auto ex = t->executor();
  dispatch_inline(ex, [t = std::move(t), f = std::forward<F>(f)]() mutable { f(*t); });
}

void session_reply::respond(response res) {
  auto ptr = std::make_shared<response>(std::move(res));
  on_strand([seq = seq_, ptr = std::move(ptr)](reply_target& t) mutable {
    t.deliver(seq, write_item{std::move(ptr)}, true);
  });
}

void session_reply::respond_serialized(serialized_head head, std::string body) {
  on_strand([seq = seq_, head = std::move(head), body = std::move(body)](reply_target& t) mutable {
    t.deliver(seq, write_item{write_item::serialized{std::move(head), std::move(body)}}, true);
  });
}

void session_reply::begin_stream(unsigned status, header_list headers) {
  begin_stream_serialized(serialize_fields(status, headers));
}

void session_reply::begin_stream_serialized(serialized_head head) {
  on_strand([seq = seq_, head = std::move(head)](reply_target& t) mutable {
    t.deliver(seq, write_item{write_item::head{std::move(head)}}, false);
  });
}

void session_reply::write_chunk(std::string data) {
  if (data.empty()) {
    return; // an empty chunk would end the chunked body
  }
  on_strand([seq = seq_, data = std::move(data)](reply_target& t) mutable {
    t.deliver(seq, write_item{write_item::chunk{std::move(data)}}, false);
  });
}

void session_reply::abort() {
  on_strand([seq = seq_](reply_target& t) { t.abort_response(seq); });
}

void session_reply::end_stream() {
  on_strand([seq = seq_](reply_target& t) {
    t.deliver(seq, write_item{write_item::last_chunk{}}, true);
  });
}

void session_reply::set_flow_source(std::weak_ptr<flow_source> source) {
  on_strand([seq = seq_, source = std::move(source)](reply_target& t) mutable {
    t.set_source(seq, std::move(source));
  });
}

void session_reply::on_disconnect(std::function<void()> f) {
  if (!f) {
    return;
  }
  auto t = target_.lock();
  if (!t) {
    // The connection is gone: its client left (a late callback for a finished response is
    // harmless, the request actor is done by then).
    return f();
  }
  auto ex = t->executor();
  auto install = [self = shared_from_this(), f = std::move(f)]() mutable {
    if (self->client_left_) {
      return f();
    }
    if (!self->gone_) {
      self->on_disconnect_ = std::move(f);
    }
  };
  dispatch_inline(ex, std::move(install));
}

} // namespace troupe::transport
