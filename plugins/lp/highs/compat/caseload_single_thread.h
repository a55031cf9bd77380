// The parts of <mutex>, <condition_variable> and <thread> that HiGHS uses, for a WASI
// sandbox with one thread and a libc++ built without threads. A lock cannot be contended;
// a wait that would block, or a thread that would start, can never be woken or joined, so
// they trap. HiGHS starts no thread when it is told to use one.
#ifndef CASELOAD_SINGLE_THREAD_H
#define CASELOAD_SINGLE_THREAD_H

#include <chrono>
#include <cstdlib>
#include <utility>

namespace std {

struct defer_lock_t { explicit defer_lock_t() = default; };
struct try_to_lock_t { explicit try_to_lock_t() = default; };
struct adopt_lock_t { explicit adopt_lock_t() = default; };
inline constexpr defer_lock_t defer_lock{};
inline constexpr try_to_lock_t try_to_lock{};
inline constexpr adopt_lock_t adopt_lock{};

class mutex {
 public:
  constexpr mutex() noexcept = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;
  void lock() {}
  bool try_lock() { return true; }
  void unlock() {}
};

class recursive_mutex : public mutex {};

template <class Mutex>
class lock_guard {
 public:
  explicit lock_guard(Mutex& m) : m_(m) { m_.lock(); }
  lock_guard(Mutex& m, adopt_lock_t) : m_(m) {}
  ~lock_guard() { m_.unlock(); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;

 private:
  Mutex& m_;
};

template <class Mutex>
class unique_lock {
 public:
  unique_lock() noexcept = default;
  explicit unique_lock(Mutex& m) : m_(&m), owns_(true) { m.lock(); }
  unique_lock(Mutex& m, defer_lock_t) noexcept : m_(&m) {}
  unique_lock(Mutex& m, try_to_lock_t) : m_(&m), owns_(m.try_lock()) {}
  unique_lock(Mutex& m, adopt_lock_t) : m_(&m), owns_(true) {}
  unique_lock(unique_lock&& other) noexcept
      : m_(std::exchange(other.m_, nullptr)), owns_(std::exchange(other.owns_, false)) {}
  unique_lock& operator=(unique_lock&& other) noexcept {
    if (owns_) m_->unlock();
    m_ = std::exchange(other.m_, nullptr);
    owns_ = std::exchange(other.owns_, false);
    return *this;
  }
  ~unique_lock() {
    if (owns_) m_->unlock();
  }
  void lock() {
    m_->lock();
    owns_ = true;
  }
  bool try_lock() { return owns_ = m_->try_lock(); }
  void unlock() {
    m_->unlock();
    owns_ = false;
  }
  bool owns_lock() const noexcept { return owns_; }
  explicit operator bool() const noexcept { return owns_; }
  Mutex* mutex() const noexcept { return m_; }
  Mutex* release() noexcept {
    owns_ = false;
    return std::exchange(m_, nullptr);
  }

 private:
  Mutex* m_ = nullptr;
  bool owns_ = false;
};

enum class cv_status { no_timeout, timeout };

class condition_variable {
 public:
  void notify_one() noexcept {}
  void notify_all() noexcept {}
  void wait(unique_lock<mutex>&) { abort(); }
  template <class Predicate>
  void wait(unique_lock<mutex>&, Predicate ready) {
    if (!ready()) abort();
  }
  template <class Rep, class Period>
  cv_status wait_for(unique_lock<mutex>&, const chrono::duration<Rep, Period>&) {
    return cv_status::timeout;
  }
  template <class Rep, class Period, class Predicate>
  bool wait_for(unique_lock<mutex>&, const chrono::duration<Rep, Period>&, Predicate ready) {
    return ready();
  }
};

class thread {
 public:
  class id {
   public:
    bool operator==(const id&) const noexcept { return true; }
    bool operator!=(const id&) const noexcept { return false; }
  };
  thread() noexcept = default;
  template <class F, class... Args>
  explicit thread(F&&, Args&&...) {
    abort();
  }
  thread(thread&&) noexcept = default;
  thread& operator=(thread&&) noexcept = default;
  bool joinable() const noexcept { return false; }
  void join() { abort(); }
  void detach() { abort(); }
  id get_id() const noexcept { return id(); }
  static unsigned hardware_concurrency() noexcept { return 1; }
};

namespace this_thread {
inline thread::id get_id() noexcept { return thread::id(); }
inline void yield() noexcept {}
template <class Rep, class Period>
void sleep_for(const chrono::duration<Rep, Period>&) {}
}  // namespace this_thread

}  // namespace std

#endif
