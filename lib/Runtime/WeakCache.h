//===- WeakCache.h - values made once and shared while in use ---*- C++ -*-===//
//
// The weights prepared when a plan is loaded (transposed filters, oneDNN's
// reordered and repacked weights) are made by the first executor that needs
// them and found by the others (docs/runtime.md, "Serving from one
// process"). A WeakCache holds them weakly: a value lives while some call
// holds it, and goes with the last one. Keys name the weight by its bytes'
// address; an executor that holds a value holds the plan whose bytes the
// key points at, so a live key cannot name other bytes. Thread-safe; the
// value is made under the lock (once, however many executors ask at once).
// Private to lib/Runtime.
//
//===----------------------------------------------------------------------===//
#ifndef MP_LIB_RUNTIME_WEAKCACHE_H
#define MP_LIB_RUNTIME_WEAKCACHE_H

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace mp::rt::detail {

/// Key: equality-comparable. Value: what the callers share.
template <typename Key, typename Value> class WeakCache {
public:
  /// The live value of `key`, or make()'s (a shared_ptr; null is returned
  /// and not kept).
  template <typename Make>
  std::shared_ptr<Value> get(const Key &key, Make make) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::shared_ptr<Value> found;
    // Drop the expired entries while looking.
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [&](const Entry &e) {
                                    std::shared_ptr<Value> live =
                                        e.value.lock();
                                    if (live && !found && e.key == key)
                                      found = live;
                                    return !live;
                                  }),
                   entries_.end());
    if (found)
      return found;
    std::shared_ptr<Value> made = make();
    if (made)
      entries_.push_back({key, made});
    return made;
  }

  /// The sum of bytesOf(key, pointer to the value) over the live values.
  template <typename BytesOf> size_t liveBytes(BytesOf bytesOf) {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t bytes = 0;
    for (const Entry &e : entries_)
      if (std::shared_ptr<Value> live = e.value.lock())
        bytes += bytesOf(e.key, live.get());
    return bytes;
  }

private:
  struct Entry {
    Key key;
    std::weak_ptr<Value> value;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;
};

} // namespace mp::rt::detail

#endif // MP_LIB_RUNTIME_WEAKCACHE_H
