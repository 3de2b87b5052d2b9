// What operators rely on: server reflection (grpcurl list / describe), the
// standard health service, and machine-readable error metadata.
#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/message.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::DescriptorPool;
using google::protobuf::Message;
using google::protobuf::MessageFactory;

// A grpc.reflection.v1alpha client without generated code: the message types
// come from the descriptors linked in with gRPC's reflection library, the
// call goes through the generic stub. Sends one request, returns the one
// response (or nullptr).
std::unique_ptr<Message> Reflect(const std::string& address,
                                 const std::string& field,
                                 const std::string& value) {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  const Descriptor* request_type = pool->FindMessageTypeByName(
      "grpc.reflection.v1alpha.ServerReflectionRequest");
  const Descriptor* response_type = pool->FindMessageTypeByName(
      "grpc.reflection.v1alpha.ServerReflectionResponse");
  if (request_type == nullptr || response_type == nullptr) {
    ADD_FAILURE() << "reflection descriptors are not linked in";
    return nullptr;
  }
  std::unique_ptr<Message> request(
      MessageFactory::generated_factory()->GetPrototype(request_type)->New());
  request->GetReflection()->SetString(
      request.get(), request_type->FindFieldByName(field), value);

  grpc::GenericStub stub(NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  grpc::CompletionQueue cq;
  auto call = stub.PrepareCall(
      &context,
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  auto step = [&cq](int expected_tag) {
    void* tag = nullptr;
    bool ok = false;
    return cq.Next(&tag, &ok) && ok &&
           tag == reinterpret_cast<void*>(static_cast<intptr_t>(expected_tag));
  };
  auto tag = [](int n) {
    return reinterpret_cast<void*>(static_cast<intptr_t>(n));
  };

  call->StartCall(tag(1));
  bool ok = step(1);
  grpc::Slice slice(request->SerializeAsString());
  grpc::ByteBuffer outgoing(&slice, 1);
  if (ok) {
    call->Write(outgoing, tag(2));
    ok = step(2);
  }
  grpc::ByteBuffer incoming;
  if (ok) {
    call->Read(&incoming, tag(3));
    ok = step(3);
  }
  call->WritesDone(tag(4));
  step(4);
  grpc::Status status;
  call->Finish(&status, tag(5));
  void* ignored_tag;
  bool ignored_ok;
  cq.Next(&ignored_tag, &ignored_ok);
  cq.Shutdown();
  while (cq.Next(&ignored_tag, &ignored_ok)) {
  }
  if (!ok) {
    ADD_FAILURE() << "reflection call failed: " << status.error_message();
    return nullptr;
  }
  std::vector<grpc::Slice> slices;
  incoming.Dump(&slices).IgnoreError();
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  std::unique_ptr<Message> response(
      MessageFactory::generated_factory()->GetPrototype(response_type)->New());
  if (!response->ParseFromString(bytes)) return nullptr;
  return response;
}

class OperatorsTest : public ServerTest {};

TEST_F(OperatorsTest, ReflectionListsTheLockServiceAndHealth) {
  std::unique_ptr<Message> response = Reflect(address_, "list_services", "");
  ASSERT_NE(response, nullptr);
  const std::string text = response->DebugString();
  EXPECT_NE(text.find("name: \"leasekeeper.v1.LockService\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("name: \"grpc.health.v1.Health\""), std::string::npos)
      << text;
}

TEST_F(OperatorsTest, ReflectionDescribesTheLockService) {
  std::unique_ptr<Message> response =
      Reflect(address_, "file_containing_symbol", "leasekeeper.v1.LockService");
  ASSERT_NE(response, nullptr);
  const Descriptor* type = response->GetDescriptor();
  const auto* files_field = type->FindFieldByName("file_descriptor_response");
  const Message& files =
      response->GetReflection()->GetMessage(*response, files_field);
  const auto* bytes_field =
      files.GetDescriptor()->FindFieldByName("file_descriptor_proto");
  const int count = files.GetReflection()->FieldSize(files, bytes_field);
  std::vector<std::string> methods;
  for (int i = 0; i < count; ++i) {
    google::protobuf::FileDescriptorProto file;
    ASSERT_TRUE(file.ParseFromString(
        files.GetReflection()->GetRepeatedString(files, bytes_field, i)));
    for (const auto& service : file.service()) {
      if (file.package() + "." + service.name() !=
          "leasekeeper.v1.LockService") {
        continue;
      }
      for (const auto& method : service.method())
        methods.push_back(method.name());
    }
  }
  EXPECT_EQ(methods, (std::vector<std::string>{
                         "Acquire", "Renew", "Release", "Write", "Read",
                         "Delete", "ListKeys",
                         "Inspect", "Status", "ListLocks", "Session",
                         "ForceRelease", "ServerInfo", "ClusterStatus",
                         "Watch"}));
}

TEST_F(OperatorsTest, HealthAnswersServing) {
  auto health = grpc::health::v1::Health::NewStub(NewChannel(address_));
  for (const char* service : {"", "leasekeeper.v1.LockService"}) {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    grpc::Status status = health->Check(&context, request, &response);
    ASSERT_TRUE(status.ok()) << service << ": " << status.error_message();
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING)
        << service;
  }
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("no.such.Service");
  grpc::health::v1::HealthCheckResponse response;
  EXPECT_EQ(health->Check(&context, request, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(OperatorsTest, ClusterStatusOnASingleNodeNamesItselfLeaderAtEpochZero) {
  auto stub = pb::LockService::NewStub(NewChannel(address_));
  grpc::ClientContext context;
  pb::ClusterStatusResponse response;
  ASSERT_TRUE(
      stub->ClusterStatus(&context, pb::ClusterStatusRequest(), &response).ok());
  EXPECT_EQ(response.cluster(), "");
  EXPECT_EQ(response.role(), pb::LEADER);
  EXPECT_EQ(response.leader_address(), address_);
  EXPECT_EQ(response.epoch(), 0u);
}

TEST_F(OperatorsTest, ErrorsCarryTheContractTextAndAMachineReadableReason) {
  ASSERT_TRUE(client_->Acquire("job", "L", 60'000).ok());
  Result<pb::AcquireResponse> busy = client_->Acquire("job", "L", 60'000);
  EXPECT_EQ(busy.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(busy.status.error_message(), "client busy");
  EXPECT_EQ(busy.reason, "CLIENT_BUSY");
  EXPECT_EQ(busy.detail.reason(), pb::CLIENT_BUSY);

  Result<pb::WriteResponse> stale = client_->Write("L", "k", "v", 1);
  ASSERT_TRUE(stale.ok());
  ASSERT_TRUE(client_->Release("job", "L").ok());
  ASSERT_TRUE(client_->Acquire("next", "L", 60'000).ok());
  ASSERT_TRUE(client_->Write("L", "k", "v2", 2).ok());
  stale = client_->Write("L", "k", "old", 1);
  EXPECT_EQ(stale.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(stale.status.error_message(), "stale token");
  EXPECT_EQ(stale.reason, "STALE_TOKEN");
  EXPECT_EQ(client_->Read("L", "k").response.value(), "v2");
}

Result<pb::ForceReleaseResponse> ForceRelease(TestClient& client,
                                              const std::string& lock,
                                              const std::string& holder) {
  grpc::ClientContext context;
  pb::ForceReleaseRequest request;
  request.set_lock(lock);
  request.set_client_id(holder);
  Result<pb::ForceReleaseResponse> result;
  result.status =
      client.stub().ForceRelease(&context, request, &result.response);
  ReadErrorMetadata(context, result);
  return result;
}

TEST_F(OperatorsTest, ForceReleaseOfALockNobodyHoldsSaysItHasNoHolder) {
  Result<pb::ForceReleaseResponse> free = ForceRelease(*client_, "locks/x", "");
  EXPECT_EQ(free.code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(free.status.error_message(), "locks/x has no holder");
  EXPECT_EQ(free.reason, "NO_HOLDER");
  EXPECT_EQ(free.detail.reason(), pb::NO_HOLDER);

  ASSERT_TRUE(client_->Acquire("job", "locks/x", 60'000).ok());
  Result<pb::ForceReleaseResponse> other =
      ForceRelease(*client_, "locks/x", "someone-else");
  EXPECT_EQ(other.status.error_message(),
            "locks/x is not held by someone-else");
  EXPECT_EQ(other.reason, "NO_HOLDER");
  EXPECT_EQ(client_->Inspect("locks/x").response.holders_size(), 1)
      << "a refused force-release changes nothing";
  EXPECT_TRUE(ForceRelease(*client_, "locks/x", "job").ok());
}

}  // namespace
}  // namespace leasekeeper::testing
