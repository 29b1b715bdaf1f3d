#include "actors/request/pd_reply_gate.hpp"

#include "actors/errors.hpp"

namespace troupe::actors {

pd_reply_gate::pd_reply_gate(std::shared_ptr<transport::reply_channel> client,
                             std::size_t hold_limit)
    : client_(std::move(client)), hold_limit_(hold_limit) {}

void pd_reply_gate::respond(transport::response res) {
  std::lock_guard guard{mx_};
  if (closed_) {
    return;
  }
  // Error responses wait for the request actor, which answers them in the API's format.
  if (!open_ || res.result_int() >= 400) {
    response_ = std::move(res);
    return;
  }
  if (!logprobs_.empty()) {
    if (auto merged = protocol::merge_input_logprobs(res.body(), logprobs_)) {
      res.body() = std::move(*merged);
    }
  }
  touched_ = true;
  client_done_ = true;
  status_ = res.result_int();
  client_->respond(std::move(res));
}

void pd_reply_gate::begin_stream(unsigned status, transport::header_list headers) {
  std::lock_guard guard{mx_};
  if (closed_) {
    return;
  }
  if (!open_) {
    head_.emplace(status, std::move(headers));
    return;
  }
  touched_ = true;
  status_ = status;
  client_->begin_stream(status, std::move(headers));
}

void pd_reply_gate::write_chunk(std::string data) {
  std::lock_guard guard{mx_};
  if (closed_) {
    return;
  }
  if (!open_) {
    if (chunks_.size() + data.size() > hold_limit_) {
      overflowed_ = true;
      chunks_.clear();
      closed_ = true;
      return;
    }
    chunks_.append(data);
    return;
  }
  auto out = transform_locked(std::move(data));
  if (!out.empty()) {
    client_->write_chunk(std::move(out));
  }
}

void pd_reply_gate::end_stream() {
  std::lock_guard guard{mx_};
  if (closed_) {
    return;
  }
  if (!open_) {
    ended_ = true;
    return;
  }
  if (auto rest = framer_.pending(); !rest.empty()) {
    client_->write_chunk(std::string(rest));
  }
  client_done_ = true;
  client_->end_stream();
}

void pd_reply_gate::set_flow_source(std::weak_ptr<transport::flow_source> source) {
  // While the gate holds, nothing reaches the client and the hold limit bounds what is held;
  // once open, the client's connection paces the decode stream.
  client_->set_flow_source(std::move(source));
}

void pd_reply_gate::on_disconnect(std::function<void()> f) {
  client_->on_disconnect(std::move(f));
}

void pd_reply_gate::abort() {
  client_->abort();
}

void pd_reply_gate::open(protocol::input_logprobs logprobs) {
  std::lock_guard guard{mx_};
  if (open_ || closed_) {
    return;
  }
  open_ = true;
  logprobs_ = std::move(logprobs);
  flush_locked();
}

void pd_reply_gate::flush_locked() {
  if (response_ && response_->result_int() < 400) {
    auto res = std::move(*response_);
    response_.reset();
    if (!logprobs_.empty()) {
      if (auto merged = protocol::merge_input_logprobs(res.body(), logprobs_)) {
        res.body() = std::move(*merged);
      }
    }
    touched_ = true;
    client_done_ = true;
    status_ = res.result_int();
    client_->respond(std::move(res));
    return;
  }
  if (!head_) {
    return;
  }
  touched_ = true;
  status_ = head_->first;
  client_->begin_stream(head_->first, std::move(head_->second));
  head_.reset();
  if (!chunks_.empty()) {
    auto out = transform_locked(std::move(chunks_));
    chunks_.clear();
    if (!out.empty()) {
      client_->write_chunk(std::move(out));
    }
  }
  if (ended_) {
    if (auto rest = framer_.pending(); !rest.empty()) {
      client_->write_chunk(std::string(rest));
    }
    client_done_ = true;
    client_->end_stream();
  }
}

std::string pd_reply_gate::transform_locked(std::string data) {
  if (logprobs_.empty()) {
    return data;
  }
  std::string out;
  out.reserve(data.size());
  framer_.feed(data, [&](std::string_view ev) {
    if (auto merged = protocol::merge_input_logprobs_event(ev, logprobs_)) {
      out.append(*merged);
    } else {
      out.append(ev);
    }
  });
  return out;
}

unsigned pd_reply_gate::fail(const protocol::api_error& err, protocol::api_format format,
                             const std::string& request_id, unsigned version, bool use_held_error) {
  std::lock_guard guard{mx_};
  if (failed_) {
    return status_;
  }
  failed_ = true;
  closed_ = true;
  auto held = std::move(response_);
  response_.reset();
  head_.reset();
  chunks_.clear();
  if (!touched_) {
    touched_ = true;
    if (use_held_error && held && held->result_int() >= 400) {
      status_ = held->result_int();
      client_->respond(std::move(*held));
    } else {
      status_ = protocol::http_status(err.code);
      client_->respond(make_error_response(err, format, request_id, version));
    }
  } else if (!client_done_) {
    // The client has the head and some events already: the error ends the stream.
    client_->write_chunk(protocol::render_error_event(err, format));
    client_->end_stream();
  }
  client_done_ = true;
  return status_;
}

bool pd_reply_gate::touched_client() const {
  std::lock_guard guard{mx_};
  return touched_;
}

bool pd_reply_gate::overflowed() const {
  std::lock_guard guard{mx_};
  return overflowed_;
}

std::optional<std::pair<unsigned, std::string>> pd_reply_gate::error_response() const {
  std::lock_guard guard{mx_};
  if (response_ && response_->result_int() >= 400) {
    return std::make_pair(response_->result_int(), response_->body());
  }
  return std::nullopt;
}

} // namespace troupe::actors
