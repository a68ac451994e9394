#pragma once
/// @file SharedInputs.hpp
/// Task inputs through shared memory for children on the same host (issue 43): instead of
/// moving each input through a Unix socket (two kernel copies and ZeroMQ I/O thread
/// wake-ups per task), a parent writes it into a slot of a POSIX shared-memory segment it
/// owns, one per child, and the batch entry carries only (offset, length).
///
/// - InputSegment (parent): shm_open with a random name, O_CREAT|O_EXCL|O_RDWR, mode 0600,
///   room reserved with posix_fallocate (so a full /dev/shm is a failure now, never a
///   SIGBUS later), mapped read-write. Its slots are a ring in allocation order: a slot is
///   reused only after release(task) (the task's Result from that child, the task given
///   back, or the child's drop). A full ring gives no slot: the caller sends that input
///   inline (never blocks, never loses a task). The name is unlinked as soon as the child
///   answers (unlink()) and at the latest by the destructor, so /dev/shm keeps nothing.
/// - InputMapping (child): opens the announced name read-only, checks the owner is its own
///   uid and the size is the announced one, maps it PROT_READ. claim() checks a reference
///   from the parent (inside the segment, overlapping no slot it still holds) and throws
///   net::DecodeError otherwise, so a hostile or broken parent is dropped, never a crash.
///   Views keep the mapping alive (shared_ptr) as long as any exists.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

namespace treefarm::zmq_node {

/// Bytes of the segment of a child whose buffer holds `buffer` tasks: room for the inputs it
/// can have at once — its buffer, a few running, a few on their way back — each at most
/// net::max_batched_payload_bytes (16 KiB), a quarter more for the
/// ring's release in order; whole MiB, at least 1 MiB, at most 32 MiB (about 2,000 inputs of
/// a matmul of order 32). A buffer of 100 takes 3 MiB, one of 1,000 takes 23 MiB. When the
/// run's largest input (`largest_input`, bytes) is larger than a batch takes, room for the
/// buffer's worth of it and a few running, a quarter more, at most
/// shared_input_big_segment_max_bytes: the quickstart's buffer of 10 and 4 MiB inputs take 75 MiB.
std::size_t shared_input_segment_bytes(std::uint32_t buffer, std::uint64_t largest_input = 0);

/// Bytes of a segment sized for inputs larger than a batch takes, at most.
inline constexpr std::size_t shared_input_big_segment_max_bytes = std::size_t{256} << 20;

/// Bytes of segments one parent keeps at most, all its children together.
inline constexpr std::size_t shared_inputs_max_bytes = std::size_t{1} << 30;

/// Segments sized for the buffer (shared_input_segment_bytes) are given while a parent's
/// segments stay within this many bytes; beyond it, children get a copied segment
/// (shared_input_copied_segment_bytes). With buffers of 1,000 (23 MiB), 22 children get the
/// first kind and 234 more the second.
inline constexpr std::size_t shared_inputs_sized_max_bytes = shared_inputs_max_bytes / 2;

/// Bytes of a copied segment: smaller than the child's buffer (128 inputs of 16 KiB, whatever
/// the buffer); its child reads each input in place until the task's Result, and the tasks
/// beyond its slots wait in the parent until Results free some (SharedInputLinks::hold).
inline constexpr std::size_t shared_input_copied_segment_bytes = std::size_t{2} << 20;

/// Bytes a parent may reserve for a new segment now: half of what /dev/shm (`dir`) has free
/// (0 without it). Each segment is reserved in /dev/shm's memory when made (posix_fallocate)
/// — about what the children's buffers would hold of the same inputs sent inline; children
/// beyond shared_inputs_max_bytes or this room get their inputs inline.
std::size_t shared_inputs_room_bytes(const char* dir = "/dev/shm");

/// Slots start at multiples of this (bytes): a cache line, so kernels read aligned rows.
inline constexpr std::size_t shared_input_slot_alignment = 64;

/// Where an input lies in a segment (bytes from its start, and its length in bytes).
struct SlotRef {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  friend bool operator==(const SlotRef&, const SlotRef&) = default;
};

/// The parent's segment for one child, and its ring of slots.
class InputSegment {
 public:
  /// Makes a segment of `bytes`; nullptr (and `why` says what failed) when shared memory
  /// cannot be had (no /dev/shm, out of room, limits).
  static std::unique_ptr<InputSegment> create(std::size_t bytes, std::string* why = nullptr);
  ~InputSegment();
  InputSegment(const InputSegment&) = delete;
  InputSegment& operator=(const InputSegment&) = delete;

  /// The name to announce to the child ("/treefarm-<pid>-<random hex>").
  const std::string& name() const { return name_; }
  std::size_t size() const { return size_; }
  /// Removes the name from /dev/shm (idempotent); the mapping stays usable.
  void unlink();
  bool linked() const { return linked_; }

  /// A slot of `length` bytes for `task` (1 <= length <= size()), writable through
  /// bytes(); nullopt when the ring has no room now or `task` already holds a slot.
  std::optional<SlotRef> take(std::uint64_t task, std::size_t length);
  /// Whether take() would find room for `length` bytes now.
  bool has_room(std::size_t length) const { return length > 0 && length <= size_ && place(length).has_value(); }
  /// The writable bytes of a slot given by take().
  std::span<std::byte> bytes(SlotRef slot) const;
  /// Frees `task`'s slot; false when it holds none (already released or never given).
  bool release(std::uint64_t task);
  /// Slots given and not released.
  std::size_t live() const { return by_task_.size(); }
  /// Whether [offset, offset + length) is exactly a slot given to `task` and not released.
  bool holds(std::uint64_t task, SlotRef slot) const;
  /// Whether `task` holds a slot now.
  bool holds(std::uint64_t task) const { return by_task_.contains(task); }

 private:
  struct Slot {
    SlotRef ref;
    std::uint64_t task = 0;
    bool released = false;
  };
  InputSegment(std::string name, int fd, std::byte* base, std::size_t size);
  /// Where a slot of `length` bytes would start now, if the ring has room.
  std::optional<std::uint64_t> place(std::size_t length) const;

  std::string name_;
  int fd_ = -1;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  bool linked_ = true;
  std::deque<Slot> ring_;  ///< allocation order; the front is the oldest not yet freed
  std::unordered_map<std::uint64_t, Slot*> by_task_;  ///< deque references stay valid
};

/// The child's read-only view of its parent's segment.
class InputMapping : public std::enable_shared_from_this<InputMapping> {
 public:
  /// Opens and maps `name`; nullptr (and `why` says why) when it cannot be opened, is not
  /// owned by this process's uid, is not exactly `bytes` long, or cannot be mapped.
  /// `copied`: offered as a copied segment, smaller than the buffer (copied()).
  static std::shared_ptr<InputMapping> attach(const std::string& name, std::size_t bytes, std::string* why = nullptr,
                                              bool copied = false);
  ~InputMapping();
  InputMapping(const InputMapping&) = delete;
  InputMapping& operator=(const InputMapping&) = delete;

  std::size_t size() const { return size_; }
  /// Whether the parent offered it as a copied segment (smaller than the buffer: the tasks
  /// beyond its slots wait in the parent). Its inputs are read in place all the same, each
  /// until the task's Result (or PullReply) goes up: no copy into fresh memory per batch.
  bool copied() const { return copied_; }
  /// Takes a reference from the parent for `task`: throws net::DecodeError when it is
  /// empty, reaches outside the segment, overlaps a slot still held or `task` already holds
  /// one. Returns the bytes (valid while this mapping lives).
  std::span<const std::byte> claim(std::uint64_t task, SlotRef slot);
  /// The task's Result went up (or the task went back): its slot may be reused by the
  /// parent. False when `task` holds none.
  bool release(std::uint64_t task);
  std::size_t held() const { return by_task_.size(); }

 private:
  InputMapping(const std::byte* base, std::size_t size, bool copied) : base_(base), size_(size), copied_(copied) {}

  const std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  bool copied_ = false;
  std::map<std::uint64_t, std::uint64_t> held_;               ///< offset -> end, held slots
  std::unordered_map<std::uint64_t, std::uint64_t> by_task_;  ///< task -> offset
};

}  // namespace treefarm::zmq_node
