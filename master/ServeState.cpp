#include "master/ServeState.hpp"

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <spdlog/spdlog.h>

#include "runtime/metrics/AtomicFile.hpp"

namespace treefarm::master {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {
json to_json(const Job& j, const std::string& state) {
  return {{"id", j.id},         {"owner", j.owner},           {"name", j.name},       {"experiment", j.text},
          {"policy", j.policy}, {"calibration", j.calibration}, {"calibrate", j.calibrate},
          {"live_tree", j.live_tree}, {"outputs", j.outputs},   {"state", state}};
}

Job job_of(const json& r) {
  Job j;
  j.id = r.at("id").get<std::uint64_t>();
  j.owner = r.at("owner").get<std::string>();
  j.name = fs::path(r.at("name").get<std::string>()).filename().string();  // never a path out of its directory
  j.text = r.at("experiment").get<std::string>();
  j.policy = r.value("policy", "");
  j.calibration = r.value("calibration", "");
  j.calibrate = r.value("calibrate", "");
  j.live_tree = r.value("live_tree", false);
  j.outputs = r.value("outputs", false);
  if (j.name.empty() || j.name == "." || j.name == "..") throw std::invalid_argument("no experiment name");
  return j;
}

std::optional<json> read_record(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  auto j = json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}
}  // namespace

JobStore::JobStore(fs::path dir) : dir_(std::move(dir)) {
  fs::create_directories(dir_);
  // Experiments, input files and results of every submitter: for the master's user only.
  fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::replace);
}

fs::path JobStore::job_dir(std::uint64_t id) const { return dir_ / ("job-" + std::to_string(id)); }

void JobStore::save(const Job& job, const std::string& state) const {
  fs::create_directories(job_dir(job.id));
  metrics::write_file_atomically(job_dir(job.id) / "job.json", to_json(job, state).dump());
}

void JobStore::save_done(const Job& job, const json& done) const {
  auto record = to_json(job, "done");
  record["done"] = done;
  fs::create_directories(job_dir(job.id));
  metrics::write_file_atomically(job_dir(job.id) / "job.json", record.dump());
}

std::optional<std::pair<json, std::string>> JobStore::done_of(std::uint64_t id) const {
  const auto r = read_record(job_dir(id) / "job.json");
  if (!r || r->value("state", "") != "done" || !r->contains("done")) return std::nullopt;
  return std::pair{r->at("done"), r->value("owner", "")};
}

JobStore::Restored JobStore::restore() const {
  Restored out;
  static const std::regex name("^job-([0-9]{1,18})$");
  std::vector<std::pair<std::uint64_t, json>> records;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    std::smatch m;
    const std::string file = e.path().filename().string();
    if (!e.is_directory() || !std::regex_match(file, m, name)) continue;
    const std::uint64_t id = std::stoull(m[1].str());
    out.next_id = std::max(out.next_id, id + 1);
    const auto path = e.path() / "job.json";
    if (!fs::exists(path)) continue;  // refused at submission, or from before states were kept
    auto r = read_record(path);
    if (!r) {
      spdlog::warn("state: {} cannot be read: experiment {} is not taken up", path.string(), id);
      continue;
    }
    records.emplace_back(id, std::move(*r));
  }
  std::sort(records.begin(), records.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [id, r] : records) {
    const std::string state = r.value("state", "");
    if (state != "queued" && state != "running") continue;
    try {
      Job j = job_of(r);
      if (j.id != id) throw std::invalid_argument("its id is " + std::to_string(j.id));
      j.resume = state == "running";
      if (j.resume)
        out.queue.push_front(std::move(j));
      else
        out.queue.push_back(std::move(j));
    } catch (const std::exception& e) {
      spdlog::warn("state: {} is not a job record ({}): experiment {} is not taken up",
                   (job_dir(id) / "job.json").string(), e.what(), id);
    }
  }
  return out;
}

void write_inputs(const fs::path& dir, const json& inputs, std::span<zmq::message_t> files) {
  if (!inputs.is_array() || inputs.size() != files.size())
    throw std::invalid_argument("a submission with " + std::to_string(files.size()) + " file frames for " +
                                std::to_string(inputs.is_array() ? inputs.size() : 0) + " inputs");
  for (std::size_t i = 0; i < files.size(); ++i) {
    const fs::path rel(inputs[i].at("path").get<std::string>());
    bool inside = !rel.empty() && rel.is_relative();
    for (const auto& part : rel) inside = inside && part != ".." && !part.empty();
    if (!inside) throw std::invalid_argument("input file '" + rel.string() + "': not a path inside the experiment's folder");
    if (inputs[i].at("bytes").get<std::uint64_t>() != files[i].size())
      throw std::invalid_argument("input file '" + rel.string() + "': its frame does not have the size announced");
    const auto path = dir / rel.lexically_normal();
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(static_cast<const char*>(files[i].data()), static_cast<std::streamsize>(files[i].size()));
    if (!out) throw std::runtime_error("cannot write " + path.string() + " on the master");
  }
}

}  // namespace treefarm::master
