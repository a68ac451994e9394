#pragma once
/// @file EarlyChecks.hpp
/// Checks of the three executables' options that must come before anything starts or
/// waits (workers joining, a calibration, a search): an output folder or file that
/// cannot be written, an endpoint that is not one. The messages name the option and its
/// value in the one error format ("PROGRAM: error: --out DIR: cannot create folder: ...").

#include <filesystem>
#include <string>

#include <CLI/CLI.hpp>

namespace treefarm::cli_support {

/// Makes the folder `option` names (with its parents) and checks that a file can be
/// created in it. @throws std::runtime_error (exit_error, 1):
/// "OPTION DIR: cannot create folder: REASON" or "OPTION DIR: cannot write in it: REASON".
void prepare_out_folder(const std::string& option, const std::filesystem::path& dir);

/// Checks that the file `option` names can be written: its folder exists (or, with
/// `create_folder`, is made) and takes a new file; the file itself is not touched.
/// @throws std::runtime_error (exit_error, 1): "OPTION FILE: cannot write in its folder DIR: REASON".
void check_out_file(const std::string& option, const std::filesystem::path& file, bool create_folder = false);

/// The shape of a ZeroMQ endpoint an option binds or advertises: tcp://HOST:PORT (PORT a
/// number or *), ipc://PATH; `empty_ok`: "" too (none). A parse error (exit_usage, 2):
/// "--listen: 'x' is not an endpoint: expected tcp://HOST:PORT or ipc://PATH". No help
/// name (the option's own text says what it takes).
const CLI::Validator& endpoint_check(bool empty_ok = false);

}  // namespace treefarm::cli_support
