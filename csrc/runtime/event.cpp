#include "runtime/event.h"

#include "runtime/errors.h"

namespace openneuron::runtime {

std::shared_ptr<Event::Mark> Event::latest_mark() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mark_;
}

bool Event::was_recorded() const { return latest_mark() != nullptr; }

void Event::record(Stream& stream) {
  auto mark = std::make_shared<Mark>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mark_ = mark;
    device_ = stream.device();
  }
  stream.enqueue("event_record", [mark] {
    std::lock_guard<std::mutex> lock(mark->mutex);
    mark->when = std::chrono::steady_clock::now();
    mark->done = true;
    mark->reached.notify_all();
  });
}

void Event::block(Stream& stream) const {
  auto mark = latest_mark();
  if (!mark) return;
  stream.enqueue("event_wait", [mark] {
    std::unique_lock<std::mutex> lock(mark->mutex);
    mark->reached.wait(lock, [&] { return mark->done; });
  });
}

bool Event::query() const {
  Stream::submit_gathered();  // the mark may sit in the caller's gathered batch
  auto mark = latest_mark();
  if (!mark) return true;
  std::lock_guard<std::mutex> lock(mark->mutex);
  return mark->done;
}

void Event::synchronize() const {
  Stream::submit_gathered();
  auto mark = latest_mark();
  if (!mark) return;
  std::unique_lock<std::mutex> lock(mark->mutex);
  mark->reached.wait(lock, [&] { return mark->done; });
}

double Event::elapsed_ms(const Event& end) const {
  if (!enable_timing_ || !end.enable_timing_) {
    throw Error("elapsed time needs both events created with enable_timing=True");
  }
  auto start_mark = latest_mark();
  auto end_mark = end.latest_mark();
  if (!start_mark || !end_mark) {
    throw Error("elapsed time needs both events to have been recorded");
  }
  std::chrono::steady_clock::time_point start_time, end_time;
  {
    std::lock_guard<std::mutex> lock(start_mark->mutex);
    if (!start_mark->done) throw Error("elapsed time: the start event has not completed yet");
    start_time = start_mark->when;
  }
  {
    std::lock_guard<std::mutex> lock(end_mark->mutex);
    if (!end_mark->done) throw Error("elapsed time: the end event has not completed yet");
    end_time = end_mark->when;
  }
  return std::chrono::duration<double, std::milli>(end_time - start_time).count();
}

}  // namespace openneuron::runtime
