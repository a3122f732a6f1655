use log::error;
use rustdds::mio1::{Events, Interest, Poll, Token};
use serde::{Deserialize, Serialize};
use ros2_client::{
  Context, Message, Name, Node, NodeName, NodeOptions, QosProfile, ServiceMapping, ServiceTypeName,
  qos::{Durability, History, WhenFull},
};

// This is an example / test program.
// Test this against minimal_client found in
// https://github.com/ros2/examples/blob/master/rclpy/services/minimal_client/examples_rclpy_minimal_client/client.py
// or
// % ros2 run examples_rclpy_minimal_client client
// or
// % ros2 run examples_rclcpp_minimal_client client_main

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AddTwoIntsRequest {
  pub a: i64,
  pub b: i64,
}
impl Message for AddTwoIntsRequest {}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AddTwoIntsResponse {
  pub sum: i64,
}
impl Message for AddTwoIntsResponse {}

fn main() {
  pretty_env_logger::init();

  println!(">>> ros2_service starting...");
  let mut node = create_node();
  let service_qos = create_qos();

  println!(">>> ros2_service node started");

  let service_mapping = service_mapping_from_env();
  println!(">>> using ServiceMapping::{service_mapping:?}");

  let mut server = node
    .create_server::<AddTwoIntsRequest, AddTwoIntsResponse>(
      service_mapping,
      &Name::new("/", "add_two_ints").unwrap(),
      &ServiceTypeName::new("example_interfaces", "AddTwoInts"),
      service_qos.clone(),
      service_qos,
    )
    .unwrap();

  println!(">>> ros2_service server created");

  let mut poll = Poll::new().unwrap();

  poll
    .registry()
    .register(&mut server, Token(1), Interest::READABLE)
    .unwrap();

  loop {
    println!(">>> event loop iter");
    let mut events = Events::with_capacity(100);
    poll.poll(&mut events, None).unwrap();

    for event in events.iter() {
      match event.token() {
        // Edge-triggered: answer every request that has arrived.
        Token(1) => loop {
          match server.receive_request() {
            Ok(Some((id, request))) => {
              println!(">>> Request received - id: {id:?}, request: {request:?}");
              let sum = request.a + request.b;
              let response = AddTwoIntsResponse { sum };
              match server.send_response(id, response.clone()) {
                Ok(_) => println!(">>> Server sent response: {response:?} id: {id:?}",),

                Err(e) => error!(">>> Server response error: {e:?}"),
              }
            }
            Ok(None) => break,
            Err(e) => {
              println!(">>> error with response handling, e: {e:?}");
              break;
            }
          }
        },
        _ => println!(">>> Unknown poll token {:?}", event.token()),
      } // match
    } // for
  } // loop
} // main

/// Select the service wire mapping from the `ROS2_SERVICE_MAPPING` environment
/// variable (`Basic`, `Enhanced`, or `Cyclone`). Defaults to `Enhanced`.
fn service_mapping_from_env() -> ServiceMapping {
  match std::env::var("ROS2_SERVICE_MAPPING").as_deref() {
    Ok("Basic") | Ok("basic") => ServiceMapping::Basic,
    Ok("Cyclone") | Ok("cyclone") => ServiceMapping::Cyclone,
    Ok("Enhanced") | Ok("enhanced") => ServiceMapping::Enhanced,
    Ok(other) => {
      eprintln!(">>> Unknown ROS2_SERVICE_MAPPING '{other}', using Enhanced");
      ServiceMapping::Enhanced
    }
    Err(_) => ServiceMapping::Enhanced,
  }
}

fn create_qos() -> QosProfile {
  QosProfile::publisher_default()
    .reliability_reliable(WhenFull::DEFAULT)
    .durability(Durability::Volatile)
    .history(History::KeepLast { depth: 10 })
}

fn create_node() -> Node {
  let context = Context::new().unwrap();
  context
    .new_node(
      NodeName::new("/rustdds", "rustdds_server").unwrap(),
      NodeOptions::new().enable_rosout(true),
    )
    .unwrap()
}
