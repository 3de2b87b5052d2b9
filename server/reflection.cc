#include "server/reflection.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/impl/server_initializer.h"

namespace leasekeeper::server {
namespace {

namespace rv1 = ::grpc::reflection::v1;
using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;

// Serves ReflectionV1Service on the server a builder makes: registered when
// the server is created, told the service list once it has started (the
// same two steps as gRPC's v1alpha plugin).
class ReflectionV1Plugin final : public grpc::ServerBuilderPlugin {
 public:
  std::string name() override { return "leasekeeper_reflection_v1"; }
  void InitServer(grpc::ServerInitializer* initializer) override {
    initializer->RegisterService(service_);
  }
  void Finish(grpc::ServerInitializer* initializer) override {
    service_->SetServiceList(*initializer->GetServiceList());
  }
  void ChangeArguments(const std::string& /*name*/, void* /*value*/) override {}
  bool has_sync_methods() const override { return true; }

 private:
  std::shared_ptr<ReflectionV1Service> service_ =
      std::make_shared<ReflectionV1Service>();
};

// Adds ReflectionV1Plugin to one builder. (gRPC's v1alpha plugin needs no
// option: libgrpc++_reflection registers it for every builder.)
class ReflectionV1Option final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(
      std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins)
      override {
    plugins->push_back(std::make_unique<ReflectionV1Plugin>());
  }
};

grpc::Status NotFound(absl::string_view what, absl::string_view name) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat(what, " not found: ", name));
}

}  // namespace

ReflectionV1Service::ReflectionV1Service(
    const google::protobuf::DescriptorPool* pool)
    : pool_(pool) {}

void ReflectionV1Service::SetServiceList(std::vector<std::string> services) {
  absl::MutexLock lock(&mu_);
  services_ = std::move(services);
}

grpc::Status ReflectionV1Service::ServerReflectionInfo(
    grpc::ServerContext* /*context*/,
    grpc::ServerReaderWriter<rv1::ServerReflectionResponse,
                             rv1::ServerReflectionRequest>* stream) {
  rv1::ServerReflectionRequest request;
  while (stream->Read(&request)) {
    if (!stream->Write(Answer(request))) break;  // the client went away
  }
  return grpc::Status::OK;
}

rv1::ServerReflectionResponse ReflectionV1Service::Answer(
    const rv1::ServerReflectionRequest& request) const {
  rv1::ServerReflectionResponse response;
  response.set_valid_host(request.host());
  *response.mutable_original_request() = request;
  grpc::Status status;
  switch (request.message_request_case()) {
    case rv1::ServerReflectionRequest::kListServices: {
      absl::MutexLock lock(&mu_);
      for (const std::string& name : services_) {
        response.mutable_list_services_response()->add_service()->set_name(
            name);
      }
      // Set even when empty, so the client sees which answer it got.
      response.mutable_list_services_response();
      break;
    }
    case rv1::ServerReflectionRequest::kFileByFilename: {
      const FileDescriptor* file =
          pool_->FindFileByName(request.file_by_filename());
      if (file == nullptr) {
        status = NotFound("file", request.file_by_filename());
      } else {
        AddFileAndDependencies(file, response);
      }
      break;
    }
    case rv1::ServerReflectionRequest::kFileContainingSymbol: {
      const FileDescriptor* file =
          pool_->FindFileContainingSymbol(request.file_containing_symbol());
      if (file == nullptr) {
        status = NotFound("symbol", request.file_containing_symbol());
      } else {
        AddFileAndDependencies(file, response);
      }
      break;
    }
    case rv1::ServerReflectionRequest::kFileContainingExtension:
      status = AnswerExtension(request.file_containing_extension(), response);
      break;
    case rv1::ServerReflectionRequest::kAllExtensionNumbersOfType:
      status = AnswerExtensionNumbers(request.all_extension_numbers_of_type(),
                                      response);
      break;
    case rv1::ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      status = grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                            "the request names no known reflection query");
      break;
  }
  if (!status.ok()) {
    rv1::ErrorResponse* error = response.mutable_error_response();
    error->set_error_code(status.error_code());
    error->set_error_message(status.error_message());
  }
  return response;
}

grpc::Status ReflectionV1Service::AnswerExtension(
    const rv1::ExtensionRequest& extension,
    rv1::ServerReflectionResponse& response) const {
  const Descriptor* type =
      pool_->FindMessageTypeByName(extension.containing_type());
  if (type == nullptr) return NotFound("type", extension.containing_type());
  const FieldDescriptor* field =
      pool_->FindExtensionByNumber(type, extension.extension_number());
  if (field == nullptr) {
    return NotFound("extension", absl::StrCat(extension.containing_type(),
                                              " #",
                                              extension.extension_number()));
  }
  AddFileAndDependencies(field->file(), response);
  return grpc::Status::OK;
}

grpc::Status ReflectionV1Service::AnswerExtensionNumbers(
    const std::string& type_name,
    rv1::ServerReflectionResponse& response) const {
  const Descriptor* type = pool_->FindMessageTypeByName(type_name);
  if (type == nullptr) return NotFound("type", type_name);
  std::vector<const FieldDescriptor*> extensions;
  pool_->FindAllExtensions(type, &extensions);
  rv1::ExtensionNumberResponse* numbers =
      response.mutable_all_extension_numbers_response();
  numbers->set_base_type_name(type->full_name());
  for (const FieldDescriptor* extension : extensions) {
    numbers->add_extension_number(extension->number());
  }
  return grpc::Status::OK;
}

void ReflectionV1Service::AddFileAndDependencies(
    const FileDescriptor* file, rv1::ServerReflectionResponse& response) const {
  // Depth-first, each file once (imports form a DAG in which a file may be
  // reached along several paths): the order gRPC's v1alpha answers in, so
  // the two versions answer alike.
  absl::flat_hash_set<const FileDescriptor*> seen;
  std::vector<const FileDescriptor*> pending = {file};
  while (!pending.empty()) {
    const FileDescriptor* current = pending.back();
    pending.pop_back();
    if (!seen.insert(current).second) continue;
    google::protobuf::FileDescriptorProto proto;
    current->CopyTo(&proto);
    response.mutable_file_descriptor_response()->add_file_descriptor_proto(
        proto.SerializeAsString());
    for (int i = current->dependency_count() - 1; i >= 0; --i) {
      pending.push_back(current->dependency(i));
    }
  }
}

void EnableServerReflection(grpc::ServerBuilder& builder) {
  // A use of health.pb.cc, so that the linker keeps it and its descriptors
  // register in the generated pool (see the header).
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
    builder.SetOption(std::make_unique<ReflectionV1Option>());
}

}  // namespace leasekeeper::server
