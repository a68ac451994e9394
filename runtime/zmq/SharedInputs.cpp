#include "runtime/zmq/SharedInputs.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "runtime/net/Batch.hpp"
#include "runtime/net/DecodeError.hpp"

namespace treefarm::zmq_node {

std::size_t shared_input_segment_bytes(std::uint32_t buffer, std::uint64_t largest_input) {
  constexpr std::size_t mib = std::size_t{1} << 20;
  const std::size_t inputs = std::size_t{buffer} + buffer / 8 + 16;  // the buffer, running, on the way back
  const std::size_t bytes = inputs * (net::max_batched_payload_bytes + shared_input_slot_alignment) / 4 * 5;
  const std::size_t small = std::clamp((bytes + mib - 1) / mib * mib, mib, std::size_t{32} * mib);
  if (largest_input <= net::max_batched_payload_bytes || largest_input >= net::shared_payload_mark) return small;
  // Inputs too large for a batch: room for the buffer's worth of the largest, a few running.
  const std::size_t slot = (largest_input + shared_input_slot_alignment - 1) / shared_input_slot_alignment * shared_input_slot_alignment;
  const std::size_t big = (std::size_t{buffer} + buffer / 8 + 4) * slot / 4 * 5;
  return std::max(small, std::min((big + mib - 1) / mib * mib, shared_input_big_segment_max_bytes));
}

std::size_t shared_inputs_room_bytes(const char* dir) {
  struct statvfs fs {};
  if (::statvfs(dir, &fs) != 0) return 0;
  return static_cast<std::size_t>(fs.f_bavail) * fs.f_frsize / 2;
}

namespace {

void say(std::string* why, std::string what) {
  if (why != nullptr) *why = std::move(what);
}

std::string error_text(int error) { return std::strerror(error); }

std::uint64_t round_up(std::uint64_t n) {
  return (n + shared_input_slot_alignment - 1) / shared_input_slot_alignment *
         shared_input_slot_alignment;
}

/// A name shm_open accepts and a parent could mean: "/" then letters, digits, '-' only.
bool plausible_name(const std::string& name) {
  if (name.size() < 2 || name.size() > 200 || name[0] != '/') return false;
  return std::all_of(name.begin() + 1, name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-';
  });
}

}  // namespace

std::unique_ptr<InputSegment> InputSegment::create(std::size_t bytes, std::string* why) {
  if (bytes == 0) {
    say(why, "a shared input segment needs at least one byte");
    return nullptr;
  }
  std::random_device random;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const std::uint64_t tag = (std::uint64_t{random()} << 32) ^ random();
    char name[64];
    std::snprintf(name, sizeof name, "/treefarm-%ld-%016llx", static_cast<long>(getpid()),
                  static_cast<unsigned long long>(tag));
    const int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) {
      say(why, "shm_open: " + error_text(errno));
      return nullptr;
    }
    // posix_fallocate, not ftruncate alone: a /dev/shm without room fails here, never as a
    // SIGBUS when the generator writes into a slot.
    int error = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
    if (error == 0) error = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
    // MAP_POPULATE: tmpfs zeroes a reserved page on its first fault; fault them all in now, when
    // the child joins, not one per 4 KiB of input while the run dispatches (with 256 children
    // of 3 MiB, clear_page alone took 42 % of the master's samples).
    void* base = error == 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)
                            : MAP_FAILED;
    if (error == 0 && base == MAP_FAILED) error = errno;
    if (error != 0) {
      shm_unlink(name);
      close(fd);
      say(why, std::string("shared input segment of ") + std::to_string(bytes) +
                   " bytes: " + error_text(error));
      return nullptr;
    }
    return std::unique_ptr<InputSegment>(
        new InputSegment(name, fd, static_cast<std::byte*>(base), bytes));
  }
  say(why, "shm_open: no free name after 8 attempts");
  return nullptr;
}

InputSegment::InputSegment(std::string name, int fd, std::byte* base, std::size_t size)
    : name_(std::move(name)), fd_(fd), base_(base), size_(size) {}

InputSegment::~InputSegment() {
  unlink();
  munmap(base_, size_);
  close(fd_);
}

void InputSegment::unlink() {
  if (!linked_) return;
  shm_unlink(name_.c_str());
  linked_ = false;
}

std::optional<std::uint64_t> InputSegment::place(std::size_t length) const {
  if (ring_.empty()) return 0;
  const std::uint64_t head = ring_.front().ref.offset;
  const std::uint64_t tail = round_up(ring_.back().ref.offset + ring_.back().ref.length);
  if (tail > head) {  // live slots in one run [head, tail): room after it, or before it
    if (tail + length <= size_) return tail;
    if (length <= head) return 0;
    return std::nullopt;
  }
  if (tail + length <= head) return tail;  // wrapped: room only between the tail and the head
  return std::nullopt;
}

std::optional<SlotRef> InputSegment::take(std::uint64_t task, std::size_t length) {
  if (length == 0 || length > size_ || by_task_.contains(task)) return std::nullopt;
  const auto at = place(length);
  if (!at) return std::nullopt;
  ring_.push_back(Slot{SlotRef{*at, length}, task, false});
  by_task_.emplace(task, &ring_.back());
  return ring_.back().ref;
}

std::span<std::byte> InputSegment::bytes(SlotRef slot) const {
  return {base_ + slot.offset, static_cast<std::size_t>(slot.length)};
}

bool InputSegment::release(std::uint64_t task) {
  const auto it = by_task_.find(task);
  if (it == by_task_.end()) return false;
  it->second->released = true;
  by_task_.erase(it);
  while (!ring_.empty() && ring_.front().released) ring_.pop_front();
  return true;
}

bool InputSegment::holds(std::uint64_t task, SlotRef slot) const {
  const auto it = by_task_.find(task);
  return it != by_task_.end() && it->second->ref == slot;
}

std::shared_ptr<InputMapping> InputMapping::attach(const std::string& name, std::size_t bytes, std::string* why,
                                                   bool copied) {
  if (!plausible_name(name)) {
    say(why, "not a shared input segment's name");
    return nullptr;
  }
  if (bytes == 0) {
    say(why, "an empty shared input segment");
    return nullptr;
  }
  const int fd = shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    say(why, "shm_open " + name + ": " + error_text(errno));
    return nullptr;
  }
  struct stat st {};
  std::string wrong;
  if (fstat(fd, &st) != 0) {
    wrong = "fstat: " + error_text(errno);
  } else if (!S_ISREG(st.st_mode)) {
    wrong = "not a regular file";
  } else if (st.st_uid != geteuid()) {
    wrong = "owned by uid " + std::to_string(st.st_uid) + ", not this process's " +
            std::to_string(geteuid());
  } else if ((st.st_mode & 0077) != 0) {
    wrong = "open to other users";
  } else if (static_cast<std::uint64_t>(st.st_size) != bytes) {
    wrong = std::to_string(st.st_size) + " bytes, not the " + std::to_string(bytes) +
            " announced";
  }
  void* base = MAP_FAILED;
  if (wrong.empty()) {
    base = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) wrong = "mmap: " + error_text(errno);
  }
  close(fd);  // the mapping keeps the memory
  if (!wrong.empty()) {
    say(why, "shared input segment " + name + ": " + wrong);
    return nullptr;
  }
  return std::shared_ptr<InputMapping>(new InputMapping(static_cast<const std::byte*>(base), bytes, copied));
}

InputMapping::~InputMapping() { munmap(const_cast<std::byte*>(base_), size_); }

std::span<const std::byte> InputMapping::claim(std::uint64_t task, SlotRef slot) {
  if (slot.length == 0) throw net::DecodeError("shared input reference of 0 bytes");
  if (slot.offset > size_ || slot.length > size_ - slot.offset) {
    throw net::DecodeError("shared input reference [" + std::to_string(slot.offset) + ", +" +
                           std::to_string(slot.length) + ") outside the segment of " +
                           std::to_string(size_) + " bytes");
  }
  if (by_task_.contains(task)) {
    throw net::DecodeError("shared input reference for task " + std::to_string(task) +
                           ", which already holds one");
  }
  const std::uint64_t end = slot.offset + slot.length;
  auto next = held_.lower_bound(slot.offset);
  const bool overlaps_next = next != held_.end() && next->first < end;
  const bool overlaps_prev = next != held_.begin() && std::prev(next)->second > slot.offset;
  if (overlaps_next || overlaps_prev) {
    throw net::DecodeError("shared input reference [" + std::to_string(slot.offset) + ", +" +
                           std::to_string(slot.length) + ") overlaps a slot still held");
  }
  held_.emplace(slot.offset, end);
  by_task_.emplace(task, slot.offset);
  return {base_ + slot.offset, static_cast<std::size_t>(slot.length)};
}

bool InputMapping::release(std::uint64_t task) {
  const auto it = by_task_.find(task);
  if (it == by_task_.end()) return false;
  held_.erase(it->second);
  by_task_.erase(it);
  return true;
}

}  // namespace treefarm::zmq_node
