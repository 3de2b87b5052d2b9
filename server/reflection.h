// Server reflection of leasekeeperd: what grpcurl, Postman and other
// reflection clients read to call the daemon without its .proto files.
//
// leasekeeperd serves both versions of the protocol over the one generated
// descriptor pool of the process:
//   grpc.reflection.v1alpha.ServerReflection   gRPC's own implementation
//                                              (libgrpc++_reflection)
//   grpc.reflection.v1.ServerReflection        ReflectionV1Service below:
//                                              Debian 12's gRPC (1.51) has
//                                              no v1, and current grpcurl
//                                              and Postman ask for v1 first
// The two speak wire-identical messages (proto/grpc/reflection/v1) and give
// the same answers: both list every service the built server registered,
// and describe every symbol of the generated pool, grpc.health.v1 included.
//
// Guarantees:
//  1. list_services names every service registered on the server, the
//     default health service and both reflection services included, once
//     the server has started.
//  2. file_by_filename, file_containing_symbol and file_containing_extension
//     answer the file and every file it depends on, transitively, each once
//     per answer, depth-first from the file asked for (as v1alpha answers).
//  3. A name the pool does not know is answered with an error_response
//     NOT_FOUND naming it; a request that sets no known field with
//     UNIMPLEMENTED. The stream goes on after either.
//  4. Each answer echoes the request (original_request) and its host
//     (valid_host).
// (gRPC 1.51's v1alpha departs from 2 on a stream of several requests: it
// repeats the files of earlier answers in later ones. Clients cope, as they
// must with a server that skips files it has sent before.)
//
// Thread-safety: ReflectionV1Service may serve any number of streams
// concurrently; SetServiceList may run while it serves (the builder calls it
// once the server has started).
#ifndef LEASEKEEPER_SERVER_REFLECTION_H_
#define LEASEKEEPER_SERVER_REFLECTION_H_

#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/descriptor.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace leasekeeper::server {

class ReflectionV1Service final
    : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // Describes the symbols of `pool`, which must outlive the service.
  explicit ReflectionV1Service(
      const google::protobuf::DescriptorPool* pool =
          google::protobuf::DescriptorPool::generated_pool());
  ReflectionV1Service(const ReflectionV1Service&) = delete;
  ReflectionV1Service& operator=(const ReflectionV1Service&) = delete;

  // The full names list_services answers (empty until called).
  void SetServiceList(std::vector<std::string> services);

  // Answers each request of the stream, in order, until the client half-
  // closes (OK) or the stream breaks. Never fails the call itself: errors
  // are per request (guarantee 3).
  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>*
          stream) override;

  // The answer to one request (guarantees 1 to 4). Cost: the size of the
  // files answered, or of the service list.
  grpc::reflection::v1::ServerReflectionResponse Answer(
      const grpc::reflection::v1::ServerReflectionRequest& request) const;

 private:
  // Appends `file` and, transitively, every file it imports.
  void AddFileAndDependencies(
      const google::protobuf::FileDescriptor* file,
      grpc::reflection::v1::ServerReflectionResponse& response) const;

  const google::protobuf::DescriptorPool* const pool_;
  mutable absl::Mutex mu_;
  std::vector<std::string> services_ ABSL_GUARDED_BY(mu_);
};

// Registers v1 reflection on `builder`; the service learns the service list
// when the builder has started the server. (v1alpha is gRPC's plugin, which
// grpc::reflection::InitProtoReflectionServerBuilderPlugin registers for
// every builder made after it.)
// Also makes sure the descriptors of grpc.health.v1 are in the generated
// pool: gRPC's default health service does not use protobuf's generated
// classes, so without a reference the linker would leave them out and
// reflection would list grpc.health.v1.Health yet answer "not found" for
// it. Call once per builder, before BuildAndStart.
void EnableServerReflection(grpc::ServerBuilder& builder);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_REFLECTION_H_
