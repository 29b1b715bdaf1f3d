#include "gateway/asio_scheduler.hpp"

#include "transport/handler_tail.hpp"

#include <array>
#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <caf/actor_system.hpp>
#include <caf/detail/thread_safe_actor_clock.hpp>
#include <caf/execution_unit.hpp>
#include <caf/policy/work_sharing.hpp>
#include <caf/resumable.hpp>
#include <caf/scheduler/coordinator.hpp>
#include <mutex>
#include <thread>

namespace troupe::gateway {

namespace net = boost::asio;

namespace {

/// Runs actor jobs as asio handlers. A job that an actor enqueues while the handler of another
/// runs (a message to the next actor of a request) runs in that same handler, after it, rather
/// than as a handler of its own: every asio handler that follows another costs a reactor pass
/// (an `epoll_wait`), and a request crosses several actors. At most `batch` jobs run per
/// handler, so sockets are still served between them. A job a socket handler enqueues (the
/// request actor a client's request spawns, a worker's answer to it) runs in that handler's
/// tail (transport/handler_tail.hpp), after the handler's own work; jobs enqueued by other
/// threads (timers, the middleman) are posted.
class asio_execution_unit final : public caf::execution_unit {
public:
  asio_execution_unit(caf::actor_system& sys, net::io_context& ioc, std::size_t throughput)
      : caf::execution_unit(&sys), ioc_(ioc), throughput_(throughput) {}

  void exec_later(caf::resumable* job) override {
    if (auto* q = current; q != nullptr && q->owner == this && q->tail < q->jobs.size()) {
      q->jobs[q->tail++] = job;
      return;
    }
    // Woken by a socket handler (a request read, a worker's answer): run right after it.
    if (transport::handler_tail::defer(&drain_deferred, this, job)) {
      return;
    }
    net::post(ioc_, [this, job] { drain(job); });
  }

private:
  static constexpr std::size_t batch = 64;

  /// The jobs that follow the one an asio handler runs, on that handler's stack.
  struct follow_queue {
    asio_execution_unit* owner;
    std::array<caf::resumable*, batch> jobs;
    std::size_t head = 0;
    std::size_t tail = 0;
  };

  /// The follow queue of the handler running on this thread, if any (a plain pointer).
  static thread_local follow_queue* current;

  static void drain_deferred(void* unit, void* job) {
    static_cast<asio_execution_unit*>(unit)->drain(static_cast<caf::resumable*>(job));
  }

  void drain(caf::resumable* first) {
    follow_queue q{this, {}};
    // Restores the outer queue however this handler ends (no dangling pointer to `q`).
    struct scope {
      follow_queue* outer;
      ~scope() { current = outer; }
    } restore{current};
    current = &q;
    run(first);
    while (q.head != q.tail) {
      run(q.jobs[q.head++]);
    }
  }

  void run(caf::resumable* job) {
    switch (job->resume(this, throughput_)) {
    case caf::resumable::resume_later:
      exec_later(job);
      break;
    case caf::resumable::done:
    case caf::resumable::awaiting_message:
      intrusive_ptr_release(job);
      break;
    case caf::resumable::shutdown_execution_unit:
      break;
    }
  }

  net::io_context& ioc_;
  std::size_t throughput_;
};

thread_local asio_execution_unit::follow_queue* asio_execution_unit::current = nullptr;

/// CAF's actor clock on one asio timer. Setting a timeout arms the timer when it is the
/// earliest; cancelling one (every terminating actor does) only edits the schedule: no
/// thread is woken. An actor newer than every actor that ever set a timeout has none to
/// cancel, and its end (a request actor's, which never sets one) returns before the lock and
/// the schedule's by-actor index, an O(log n) walk over n waiting timeouts (with 4,000
/// workers, 4,000 health checks waiting: 0.6 µs per request in a profile).
class asio_clock final : public caf::detail::thread_safe_actor_clock {
public:
  using super = caf::detail::simple_actor_clock;

  explicit asio_clock(net::io_context& ioc) : timer_(ioc) {}

  void set_ordinary_timeout(time_point t, caf::abstract_actor* self, caf::atom_value type,
                            uint64_t id) override {
    std::lock_guard guard{mx_};
    super::set_ordinary_timeout(t, self, type, id);
    note_timed(self);
    arm();
  }

  void set_multi_timeout(time_point t, caf::abstract_actor* self, caf::atom_value type,
                         uint64_t id) override {
    std::lock_guard guard{mx_};
    super::set_multi_timeout(t, self, type, id);
    note_timed(self);
    arm();
  }

  void set_request_timeout(time_point t, caf::abstract_actor* self, caf::message_id id) override {
    std::lock_guard guard{mx_};
    super::set_request_timeout(t, self, id);
    note_timed(self);
    arm();
  }

  void cancel_ordinary_timeout(caf::abstract_actor* self, caf::atom_value type) override {
    if (never_timed(self) || reentered()) {
      return;
    }
    std::lock_guard guard{mx_};
    super::cancel_ordinary_timeout(self, type);
  }

  void cancel_request_timeout(caf::abstract_actor* self, caf::message_id id) override {
    if (never_timed(self) || reentered()) {
      return;
    }
    std::lock_guard guard{mx_};
    super::cancel_request_timeout(self, id);
  }

  void cancel_timeouts(caf::abstract_actor* self) override {
    if (never_timed(self) || reentered()) {
      return;
    }
    std::lock_guard guard{mx_};
    super::cancel_timeouts(self);
  }

  void schedule_message(time_point t, caf::strong_actor_ptr receiver,
                        caf::mailbox_element_ptr content) override {
    std::lock_guard guard{mx_};
    super::schedule_message(t, std::move(receiver), std::move(content));
    arm();
  }

  void schedule_message(time_point t, caf::group target, caf::strong_actor_ptr sender,
                        caf::message content) override {
    std::lock_guard guard{mx_};
    super::schedule_message(t, std::move(target), std::move(sender), std::move(content));
    arm();
  }

  void cancel_all() override {
    std::lock_guard guard{mx_};
    clearing_.store(std::this_thread::get_id());
    super::cancel_all();
    clearing_.store(std::thread::id{});
    timer_.cancel();
    armed_ = time_point::max();
  }

private:
  /// True on the thread clearing the schedule (cancel_all): dropping an entry can release the
  /// last reference to an actor that never terminated (a hidden one waiting on a timeout), whose
  /// destruction cancels its timeouts. The schedule is being emptied anyway, and taking mx_
  /// again on this thread would deadlock.
  bool reentered() const { return clearing_.load() == std::this_thread::get_id(); }

  // Requires mx_. `self` has a timeout in the schedule now.
  void note_timed(const caf::abstract_actor* self) {
    if (self->id() > newest_timed_.load(std::memory_order_relaxed)) {
      newest_timed_.store(self->id(), std::memory_order_release);
    }
  }

  /// True when `self` never set a timeout: every entry of the schedule is keyed by the id of
  /// the actor that set it, and ids grow with each spawn. An actor sets and cancels its own
  /// timeouts, one message at a time, so its earlier `note_timed` is visible here.
  bool never_timed(const caf::abstract_actor* self) const {
    return self->id() > newest_timed_.load(std::memory_order_acquire);
  }

  // Requires mx_. Arms the timer for the earliest entry unless it already fires by then.
  void arm() {
    if (schedule().empty()) {
      return;
    }
    auto next = schedule().begin()->first;
    if (next >= armed_) {
      return;
    }
    armed_ = next;
    timer_.expires_at(next);
    timer_.async_wait([this](boost::system::error_code ec) {
      if (ec == net::error::operation_aborted) {
        return; // re-armed earlier, or cancel_all
      }
      std::lock_guard guard{mx_};
      armed_ = time_point::max();
      trigger_expired_timeouts();
      arm();
    });
  }

  std::mutex mx_;
  std::atomic<std::thread::id> clearing_{};
  std::atomic<caf::actor_id> newest_timed_{0}; // the largest id that ever set a timeout
  net::steady_timer timer_;
  time_point armed_ = time_point::max();
};

/// A work-sharing coordinator whose `enqueue` posts into asio while `to_asio` holds. Its own
/// worker thread (one) only runs actors after `hand_back`.
class asio_coordinator final : public caf::scheduler::coordinator<caf::policy::work_sharing> {
public:
  using super = caf::scheduler::coordinator<caf::policy::work_sharing>;

  asio_coordinator(caf::actor_system& sys, net::io_context& ioc)
      : super(sys), unit_(sys, ioc, 50), clock_(ioc) {}

  void enqueue(caf::resumable* job) override {
    if (to_asio.load(std::memory_order_acquire)) {
      unit_.exec_later(job);
    } else {
      super::enqueue(job);
    }
  }

  caf::detail::thread_safe_actor_clock& clock() noexcept override { return clock_; }

  void stop() override {
    clock_.cancel_all();
    super::stop();
  }

  std::atomic<bool> to_asio{true};

private:
  asio_execution_unit unit_;
  asio_clock clock_;
};

} // namespace

struct asio_scheduler::state {
  net::io_context& ioc;
  // The coordinator's switch (the coordinator is owned by the actor system). Not a pointer to
  // the coordinator: its type, of the anonymous namespace, would give this class of external
  // linkage a member of internal linkage (-Wsubobject-linkage, in a unity build).
  std::atomic<bool>* to_asio = nullptr;
};

asio_scheduler::asio_scheduler(caf::actor_system_config& cfg, net::io_context& ioc)
    : state_(std::make_shared<state>(state{ioc})) {
  cfg.set("scheduler.policy", caf::atom("sharing"));
  cfg.set("scheduler.max-threads", 1);
  cfg.module_factories.push_back(
      [st = state_](caf::actor_system& sys) -> caf::actor_system::module* {
        auto* coordinator = new asio_coordinator(sys, st->ioc);
        st->to_asio = &coordinator->to_asio;
        return coordinator;
      });
}

asio_scheduler::~asio_scheduler() = default;

void asio_scheduler::hand_back() {
  if (state_->to_asio) {
    state_->to_asio->store(false, std::memory_order_release);
  }
  state_->ioc.restart();
  while (state_->ioc.poll() > 0) {
  }
}

} // namespace troupe::gateway
