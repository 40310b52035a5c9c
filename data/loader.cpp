// DataLoader: one Epoch object per iteration owns the order, the worker threads and the
// reorder buffer that hands batches out by index (see loader.h for the contract).
#include "data/loader.h"

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <variant>

#include "tensor/thread_pool.h"

namespace rg::data {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A seed per (seed, epoch, batch): hashing rather than offsetting one stream means no
// batch can run into the numbers of the next, however many it draws.
uint64_t batch_seed(uint64_t seed, int64_t epoch, int64_t batch) {
  return splitmix64(splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(epoch)) ^ static_cast<uint64_t>(batch));
}

}  // namespace

class DataLoader::Epoch {
 public:
  Epoch(const Dataset& dataset, const DataLoaderOptions& options, std::vector<int64_t> order, int64_t epoch)
      : dataset_(dataset), options_(options), order_(std::move(order)), epoch_(epoch) {
    const auto n = static_cast<int64_t>(order_.size()), bs = options.batch_size;
    num_batches_ = options.drop_last ? n / bs : (n + bs - 1) / bs;
    if (options.normalize) norm_ = dataset.normalization();
    window_ = static_cast<int64_t>(options.num_workers) * options.prefetch_factor;
    start_threads(
        workers_, options.num_workers, [this](int) { work(); }, [this] { request_stop(); },
        "DataLoader with " + std::to_string(options.num_workers) + " workers");
  }

  ~Epoch() {
    request_stop();
    for (std::thread& t : workers_) t.join();
  }

  int64_t num_batches() const { return num_batches_; }

  // Batch number `next_` (made here, or waited for when workers make them).
  Batch next() {
    if (workers_.empty()) return make_batch(next_++);
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return ready_.count(next_) > 0; });
    auto result = std::move(ready_.at(next_));
    ready_.erase(next_++);
    lock.unlock();
    cv_.notify_all();
    if (auto* error = std::get_if<std::exception_ptr>(&result)) std::rethrow_exception(*error);
    return std::get<Batch>(std::move(result));
  }

 private:
  Batch make_batch(int64_t b) const {
    const int64_t bs = options_.batch_size, start = b * bs;
    const int64_t count = std::min<int64_t>(bs, static_cast<int64_t>(order_.size()) - start);
    Batch batch = dataset_.get_batch({order_.data() + start, static_cast<size_t>(count)},
                                     options_.normalize ? &norm_ : nullptr);
    if (options_.transform) {
      Generator gen(batch_seed(options_.seed, epoch_, b));
      batch.x = options_.transform(batch.x, gen);
    }
    return batch;
  }

  void request_stop() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
  }

  void work() {
    // Each worker makes whole batches alone: ops it calls run inline instead of all
    // workers sharing (and contending for) the process-wide intra-op pool.
    ThreadPoolScope single_threaded(1);
    std::unique_lock lock(mutex_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || (taken_ < num_batches_ && taken_ < next_ + window_); });
      if (stop_) return;
      const int64_t b = taken_++;
      lock.unlock();
      std::variant<Batch, std::exception_ptr> result;
      try {
        result = make_batch(b);
      } catch (...) {
        result = std::current_exception();
      }
      lock.lock();
      ready_.emplace(b, std::move(result));
      cv_.notify_all();
    }
  }

  const Dataset& dataset_;
  const DataLoaderOptions& options_;
  const std::vector<int64_t> order_;
  const int64_t epoch_;
  int64_t num_batches_ = 0;
  Normalization norm_;
  int64_t window_ = 0;

  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  int64_t next_ = 0;   // the next batch handed out
  int64_t taken_ = 0;  // the next batch a worker starts
  std::map<int64_t, std::variant<Batch, std::exception_ptr>> ready_;
  std::vector<std::thread> workers_;
};

DataLoader::Iterator::Iterator(Epoch* epoch) : epoch_(epoch) {
  if (!at_end()) current_ = epoch_->next();
}

bool DataLoader::Iterator::at_end() const { return epoch_ == nullptr || index_ >= epoch_->num_batches(); }

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  if (++index_ < epoch_->num_batches()) {
    current_ = epoch_->next();
  } else {
    current_ = Batch{};
  }
  return *this;
}

bool DataLoader::Iterator::operator==(const Iterator& other) const {
  if (at_end() || other.at_end()) return at_end() == other.at_end();
  return epoch_ == other.epoch_ && index_ == other.index_;
}

DataLoader::DataLoader(const Dataset& dataset, DataLoaderOptions options)
    : dataset_(dataset), options_(std::move(options)), sampler_(options_.sampler) {
  RG_CHECK(options_.batch_size > 0, "DataLoader: batch_size must be > 0, got ", options_.batch_size);
  RG_CHECK(options_.num_workers >= 0 && options_.prefetch_factor > 0, "DataLoader: num_workers must be >= 0 and ",
           "prefetch_factor > 0, got ", options_.num_workers, " and ", options_.prefetch_factor);
  RG_CHECK(!(sampler_ && options_.shuffle), "DataLoader: give either a sampler or shuffle = true, not both ",
           "(the sampler decides the order; DistributedSampler shuffles by itself)");
  if (!sampler_) {
    own_sampler_ = options_.shuffle ? std::unique_ptr<Sampler>(new RandomSampler(dataset.size(), options_.seed))
                                    : std::unique_ptr<Sampler>(new SequentialSampler(dataset.size()));
    sampler_ = own_sampler_.get();
  }
}

DataLoader::~DataLoader() = default;

DataLoader::Iterator DataLoader::begin() {
  epoch_.reset();  // stops the previous epoch's workers before starting new ones
  const int64_t epoch = sampler_->epoch();
  epoch_ = std::make_unique<Epoch>(dataset_, options_, sampler_->indices(), epoch);
  return Iterator(epoch_.get());
}

int64_t DataLoader::size() const {
  const int64_t n = sampler_->size(), bs = options_.batch_size;
  return options_.drop_last ? n / bs : (n + bs - 1) / bs;
}

}  // namespace rg::data
