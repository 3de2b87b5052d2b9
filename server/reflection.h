// Server reflection of leasekeeperd, v1 beside gRPC's own v1alpha, both over
// the process's generated descriptor pool, so grpcurl and Postman call the
// daemon without its .proto files (docs/design/server.md).
// Thread-safety: ReflectionV1Service serves any number of streams at once;
// SetServiceList may run while it serves.
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

  // The answer to one request: the service list, or the file asked for and
  // every file it depends on, transitively, each once, depth-first; an
  // error_response NOT_FOUND naming an unknown name, UNIMPLEMENTED for a
  // request that sets no known field. It echoes the request and its host.
  // Cost: the size of the files answered, or of the service list.
  grpc::reflection::v1::ServerReflectionResponse Answer(
      const grpc::reflection::v1::ServerReflectionRequest& request) const;

 private:
  // Appends `file` and, transitively, every file it imports.
  void AddFileAndDependencies(
      const google::protobuf::FileDescriptor* file,
      grpc::reflection::v1::ServerReflectionResponse& response) const;

  // Answer's extension queries: the file of one extension, and the
  // extension numbers of a type. Outcomes: OK (the answer is set);
  // NOT_FOUND naming the unknown type or extension.
  grpc::Status AnswerExtension(
      const grpc::reflection::v1::ExtensionRequest& extension,
      grpc::reflection::v1::ServerReflectionResponse& response) const;
  grpc::Status AnswerExtensionNumbers(
      const std::string& type_name,
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
