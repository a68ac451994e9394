// treefarm cancel (docs/serve.md, docs/commands.md).
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>

#include "tools/ServeClient.hpp"
#include "tools/cli/Command.hpp"

namespace treefarm::cli {

namespace {
struct CancelCli {
  tools::ServeEndpoint to;
  std::uint64_t id = 0;
  double timeout = 10;
  bool json = false;
};

int run_cancel(const CancelCli& o) {
  tools::ServeClient client(o.to);
  const auto answer = client.cancel(o.id, o.timeout);
  if (o.json) {
    std::cout << answer.dump() << std::endl;
    return 0;
  }
  if (answer.value("was", "") == "running")
    std::printf("experiment %llu is being cancelled: it ends at the master's next tick, the tree stays; its submitter "
                "gets results.json with \"cancelled\": true and what completed\n",
                static_cast<unsigned long long>(o.id));
  else
    std::printf("experiment %llu removed from the queue\n", static_cast<unsigned long long>(o.id));
  return 0;
}
}  // namespace

void add_cancel_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<CancelCli>();
  auto* cmd = app.add_subcommand("cancel",
                                 "Cancel an experiment on a served tree (treefarm-master --serve): a queued one leaves the\n"
                                 "queue; a running one ends (the workers reset and stay connected) and its results.json says\n"
                                 "\"cancelled\" with what completed. JOB is the id `submit` and `status` show.\n"
                                 "Example: treefarm cancel 3 --to tcp://127.0.0.1:5600");
  cmd->add_option("job", o->id, "The experiment's id (as submit and status print it)")->required();
  add_serve_endpoint_options(*cmd, o->to, true);
  cmd->add_option("--timeout", o->timeout, "seconds to wait for the master's answer")
      ->check(treefarm::cli_support::positive_number())->capture_default_str();
  cmd->add_flag("--json", o->json, "The master's answer as one JSON line");
  out.push_back({cmd, [o] { return run_cancel(*o); }});
}

}  // namespace treefarm::cli
