// Overloaded: a visitor built from lambdas, for std::visit over the log's
// variants (Operation bodies, ServerRecord bodies).
//
// Thread-safety: a value.
#ifndef LEASEKEEPER_STORAGE_OVERLOADED_H_
#define LEASEKEEPER_STORAGE_OVERLOADED_H_

namespace leasekeeper::storage {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_OVERLOADED_H_
