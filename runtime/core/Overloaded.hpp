#pragma once
/// @file Overloaded.hpp
/// The usual helper to std::visit a variant with one lambda per alternative.

namespace treefarm::core {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace treefarm::core
