// Server reflection, v1 and v1alpha, on an in-process leasekeeperd: a v1
// client (what current grpcurl and Postman try first) lists the services
// and resolves symbols, and v1alpha gives the same answers byte for byte.
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.pb.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/impl/codegen/client_callback.h"
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

namespace rv1 = ::grpc::reflection::v1;

constexpr char kV1Method[] =
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
constexpr char kV1AlphaMethod[] =
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

// Sends `requests` on one ServerReflectionInfo stream of `method` and
// returns the answers. The v1 messages serve for v1alpha too: the two
// protocols are wire-identical apart from the method's name.
std::vector<rv1::ServerReflectionResponse> Reflect(
    const std::string& address, const char* method,
    const std::vector<rv1::ServerReflectionRequest>& requests,
    grpc::Status* status) {
  std::shared_ptr<grpc::Channel> channel = NewChannel(address);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  // What the generated stub does, with the method name as a parameter.
  std::unique_ptr<grpc::ClientReaderWriter<rv1::ServerReflectionRequest,
                                           rv1::ServerReflectionResponse>>
      stream(grpc::internal::ClientReaderWriterFactory<
             rv1::ServerReflectionRequest, rv1::ServerReflectionResponse>::
                 Create(channel.get(),
                        grpc::internal::RpcMethod(
                            method, grpc::internal::RpcMethod::BIDI_STREAMING),
                        &context));
  std::vector<rv1::ServerReflectionResponse> responses;
  for (const rv1::ServerReflectionRequest& request : requests) {
    if (!stream->Write(request)) break;
    rv1::ServerReflectionResponse response;
    if (!stream->Read(&response)) break;
    responses.push_back(std::move(response));
  }
  stream->WritesDone();
  *status = stream->Finish();
  return responses;
}

rv1::ServerReflectionRequest ListServices() {
  rv1::ServerReflectionRequest request;
  request.set_list_services("*");
  return request;
}

rv1::ServerReflectionRequest Symbol(const std::string& symbol) {
  rv1::ServerReflectionRequest request;
  request.set_host("localhost");
  request.set_file_containing_symbol(symbol);
  return request;
}

std::vector<std::string> ServiceNames(
    const rv1::ServerReflectionResponse& response) {
  std::vector<std::string> names;
  for (const rv1::ServiceResponse& service :
       response.list_services_response().service()) {
    names.push_back(service.name());
  }
  return names;
}

std::vector<google::protobuf::FileDescriptorProto> Files(
    const rv1::ServerReflectionResponse& response) {
  std::vector<google::protobuf::FileDescriptorProto> files;
  for (const std::string& bytes :
       response.file_descriptor_response().file_descriptor_proto()) {
    files.emplace_back();
    EXPECT_TRUE(files.back().ParseFromString(bytes));
  }
  return files;
}

class ReflectionTest : public ServerTest {};

TEST_F(ReflectionTest, V1ListsEveryServiceTheDaemonServes) {
  grpc::Status status;
  std::vector<rv1::ServerReflectionResponse> answers =
      Reflect(address_, kV1Method, {ListServices()}, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(answers.size(), 1u);
  const std::vector<std::string> names = ServiceNames(answers[0]);
  const std::set<std::string> listed(names.begin(), names.end());
  EXPECT_EQ(listed.size(), names.size()) << "a service listed twice";
  for (const char* expected :
       {"leasekeeper.v1.LockService", "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection"}) {
    EXPECT_EQ(listed.count(expected), 1u) << expected;
  }
}

TEST_F(ReflectionTest, V1ResolvesAMethodToItsFileWithEveryDependency) {
  grpc::Status status;
  std::vector<rv1::ServerReflectionResponse> answers = Reflect(
      address_, kV1Method, {Symbol("leasekeeper.v1.LockService.Acquire")},
      &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(answers.size(), 1u);
  EXPECT_EQ(answers[0].valid_host(), "localhost");
  EXPECT_EQ(answers[0].original_request().file_containing_symbol(),
            "leasekeeper.v1.LockService.Acquire");
  const std::vector<google::protobuf::FileDescriptorProto> files =
      Files(answers[0]);
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files[0].name(), "leasekeeper/v1/lock_service.proto");
  // Every import of every file answered is answered too, each once.
  std::set<std::string> answered;
  for (const auto& file : files) {
    EXPECT_TRUE(answered.insert(file.name()).second) << file.name();
  }
  for (const auto& file : files) {
    for (const std::string& dependency : file.dependency()) {
      EXPECT_EQ(answered.count(dependency), 1u)
          << file.name() << " imports " << dependency;
    }
  }
}

TEST_F(ReflectionTest, V1DescribesTheHealthServiceItLists) {
  grpc::Status status;
  std::vector<rv1::ServerReflectionResponse> answers =
      Reflect(address_, kV1Method, {Symbol("grpc.health.v1.Health")}, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(answers.size(), 1u);
  ASSERT_FALSE(answers[0].has_error_response())
      << answers[0].error_response().error_message();
  const std::vector<google::protobuf::FileDescriptorProto> files =
      Files(answers[0]);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].package(), "grpc.health.v1");
  ASSERT_EQ(files[0].service_size(), 1);
  EXPECT_EQ(files[0].service(0).name(), "Health");
}

TEST_F(ReflectionTest, V1AnswersAnUnknownSymbolNotFoundAndTheStreamGoesOn) {
  rv1::ServerReflectionRequest by_file;
  by_file.set_file_by_filename("grpc/health/v1/health.proto");
  rv1::ServerReflectionRequest unset;  // no query at all
  rv1::ServerReflectionRequest no_file;
  no_file.set_file_by_filename("no/such.proto");
  grpc::Status status;
  std::vector<rv1::ServerReflectionResponse> answers =
      Reflect(address_, kV1Method,
              {Symbol("no.such.Service"), unset, no_file, by_file}, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(answers.size(), 4u);
  EXPECT_EQ(answers[0].error_response().error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(answers[0].error_response().error_message(),
            "symbol not found: no.such.Service");
  EXPECT_EQ(answers[1].error_response().error_code(), grpc::UNIMPLEMENTED);
  EXPECT_EQ(answers[2].error_response().error_code(), grpc::NOT_FOUND);
  ASSERT_EQ(Files(answers[3]).size(), 1u);
  EXPECT_EQ(Files(answers[3])[0].name(), "grpc/health/v1/health.proto");
}

// One request per stream: on a longer stream gRPC 1.51's v1alpha repeats
// the files of earlier answers (server/reflection.h).
TEST_F(ReflectionTest, V1AndV1AlphaGiveTheSameAnswers) {
  for (const rv1::ServerReflectionRequest& request :
       {ListServices(), Symbol("leasekeeper.v1.LockService"),
        Symbol("grpc.health.v1.Health"),
        Symbol("leasekeeper.v1.AcquireRequest")}) {
    grpc::Status v1_status;
    grpc::Status alpha_status;
    std::vector<rv1::ServerReflectionResponse> v1 =
        Reflect(address_, kV1Method, {request}, &v1_status);
    std::vector<rv1::ServerReflectionResponse> alpha =
        Reflect(address_, kV1AlphaMethod, {request}, &alpha_status);
    ASSERT_TRUE(v1_status.ok()) << v1_status.error_message();
    ASSERT_TRUE(alpha_status.ok()) << alpha_status.error_message();
    ASSERT_EQ(v1.size(), 1u);
    ASSERT_EQ(alpha.size(), 1u);
    if (request.has_list_services()) {
      std::vector<std::string> v1_names = ServiceNames(v1[0]);
      std::vector<std::string> alpha_names = ServiceNames(alpha[0]);
      std::sort(v1_names.begin(), v1_names.end());
      std::sort(alpha_names.begin(), alpha_names.end());
      EXPECT_EQ(v1_names, alpha_names);
      continue;
    }
    EXPECT_EQ(v1[0].SerializeAsString(), alpha[0].SerializeAsString())
        << request.file_containing_symbol();
  }
}

}  // namespace
}  // namespace leasekeeper::testing
