//! The node as a ROS 2 citizen, in process (run in a private network namespace, see
//! `ros-node/README.md`): its outputs in the ROS graph under its name, described parameters,
//! read-only start-up parameters and `use_sim_time`, `/diagnostics` absolute under a namespace,
//! `lazy`, and discovery `OFF`. Each test has its own domain id; every wait is bounded.

mod common;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use common::*;
use ros2_client::dds::rustdds::policy::{self, Durability};
use ros2_client::dds::rustdds::{
    CDRDeserializerAdapter, DomainParticipantBuilder, QosPolicyBuilder, TopicKind,
};
use ros2_client::entities_info::ParticipantEntitiesInfo;
use ros2_client::gid::Gid;
use ros2_client::qos::History;
use ros2_client::rcl_interfaces::{
    DescribeParametersRequest, DescribeParametersResponse, SetParametersRequest,
    SetParametersResponse,
};
use ros2_client::{
    Context, Message, Name, NodeOptions, Parameter, ParameterValue, QosProfile, ServiceMapping,
    ServiceTypeName,
};
use smol::stream::StreamExt;
use surfcl_ros::discovery::{Discovery, DiscoveryRange};
use surfcl_ros::msg::{self, Image};

const LIMIT: Duration = Duration::from_secs(60);

/// Calls service `name` of the node `fqn` from the client's node, retrying while the reply path
/// is still being discovered (the requests are idempotent).
fn call<Req, Resp>(client: &mut Client, fqn: &str, name: &str, ty: &str, req: Req) -> Resp
where
    Req: Message + Clone + 'static,
    Resp: Message + 'static,
{
    let qos = QosProfile::publisher_default().history(History::KeepLast { depth: 1 });
    let svc = client
        .node
        .create_client::<Req, Resp>(
            ServiceMapping::Enhanced,
            &Name::new(fqn, name).unwrap(),
            &ServiceTypeName::new("rcl_interfaces", ty),
            qos.clone(),
            qos,
        )
        .unwrap();
    within(LIMIT, svc.wait_for_service(&client.node)).expect("service not discovered");
    for _ in 0..6 {
        if let Some(r) = within(Duration::from_secs(10), svc.async_call_service(req.clone())) {
            return r.unwrap();
        }
    }
    panic!("no reply from {fqn}/{name} in 6 attempts")
}

fn set(client: &mut Client, fqn: &str, name: &str, value: ParameterValue) -> (bool, String) {
    let req = SetParametersRequest {
        parameter: vec![
            Parameter {
                name: name.into(),
                value,
            }
            .into(),
        ],
    };
    let resp: SetParametersResponse = call(client, fqn, "set_parameters", "SetParameters", req);
    let r = &resp.results[0];
    (r.successful, r.reason.clone())
}

/// The GIDs of the writers `observer` discovered on DDS topic `dds_topic`.
fn writers_on(observer: &Context, dds_topic: &str) -> Vec<Gid> {
    observer
        .domain_participant()
        .discovered_writers()
        .iter()
        .filter(|w| w.publication_topic_data.topic_name() == dds_topic)
        .map(|w| Gid::from(w.writer_proxy.remote_writer_guid))
        .collect()
}

#[test]
fn graph_lists_the_outputs_under_the_node_and_parameters_are_described() {
    let domain = 171;
    let node = start_node(domain, factory(), |c| c.params = test_params());
    let mut client = Client::new(domain, "/", "/image");
    client.wait_connected(LIMIT);
    let fqn = node.fully_qualified_name().to_string();
    let observer = Context::from_domain_participant(
        DomainParticipantBuilder::new(domain)
            .with_only_networks([Ipv4Addr::LOCALHOST])
            .build()
            .unwrap(),
    )
    .unwrap();

    // ros_discovery_info (what `ros2 node info` reads): the node's entry lists the keypoints
    // and matches writers. Read with a deep history: the topic has no key, and every
    // participant's updates share it.
    let qos = QosPolicyBuilder::new()
        .durability(Durability::TransientLocal)
        .reliable(ros2_client::dds::rustdds::Duration::ZERO)
        .history(policy::History::KeepLast { depth: 200 })
        .build();
    let topic = observer
        .domain_participant()
        .create_topic(
            "ros_discovery_info".into(),
            "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_".into(),
            &qos,
            TopicKind::NoKey,
        )
        .unwrap();
    let reader = observer
        .domain_participant()
        .create_subscriber(&qos)
        .unwrap()
        .create_simple_datareader_no_key::<
            ParticipantEntitiesInfo,
            CDRDeserializerAdapter<ParticipantEntitiesInfo>,
        >(&topic, None)
        .unwrap();
    let deadline = Instant::now() + LIMIT;
    let mut listed = false;
    let stream = reader.as_async_stream();
    let mut stream = std::pin::pin!(stream);
    while !listed && Instant::now() < deadline {
        let Some(Some(Ok(sample))) = within(Duration::from_secs(2), stream.next()) else {
            continue;
        };
        let info = sample.into_value();
        let (kp, m) = (
            writers_on(&observer, "rt/keypoints"),
            writers_on(&observer, "rt/matches"),
        );
        listed = !kp.is_empty()
            && !m.is_empty()
            && info.nodes().iter().any(|n| {
                // Adding a GID the node already lists leaves its entry unchanged.
                let has = |g: &Gid| {
                    let mut probe = n.clone();
                    probe.add_writer(*g);
                    probe == *n
                };
                n.fully_qualified_name() == fqn && kp.iter().all(has) && m.iter().all(has)
            });
    }
    assert!(listed, "keypoints/matches writers not listed under {fqn}");

    let names = [
        "octaves",
        "max_keypoints",
        "ratio",
        "image_reliability",
        "use_sim_time",
    ];
    let req = DescribeParametersRequest {
        names: names.iter().map(|s| s.to_string()).collect(),
    };
    let resp: DescribeParametersResponse = call(
        &mut client,
        &fqn,
        "describe_parameters",
        "DescribeParameters",
        req,
    );
    let d = &resp.values;
    assert_eq!(d.len(), names.len());
    for x in d {
        assert!(
            !x.description.is_empty() && !x.description.contains("missing"),
            "{x:?}"
        );
    }
    assert_eq!(
        (
            d[0].integer_range[0].from_value,
            d[0].integer_range[0].to_value
        ),
        (1, 6)
    );
    assert!(d[1].integer_range[0].to_value > 10_000);
    assert_eq!(d[2].floating_point_range[0].to_value, 1.0);
    assert!(d[3].read_only && !d[0].read_only);

    // Start-up parameters are read-only; use_sim_time is the standard one, accepted.
    let (ok, reason) = set(
        &mut client,
        &fqn,
        "image_reliability",
        ParameterValue::String("reliable".into()),
    );
    assert!(!ok && reason.contains("read-only"), "{reason}");
    assert_eq!(
        set(
            &mut client,
            &fqn,
            "use_sim_time",
            ParameterValue::Boolean(true)
        ),
        (true, String::new())
    );
    node.stop();
}

#[test]
fn diagnostics_are_absolute_under_a_namespace() {
    let domain = 172;
    let node = start_node(domain, factory(), |c| {
        c.params = test_params();
        c.namespace = "/robot".into();
    });
    let mut client = Client::new(domain, "/robot", "/robot/image");
    let diag = client.diagnostics("/diagnostics");
    let report = within(Duration::from_secs(20), diag.next_message())
        .expect("nothing on /diagnostics")
        .unwrap();
    assert_eq!(report.status[0].name, "/robot/surfcl_node: processing");
    node.stop();
}

/// A publisher of images alone (no subscription to the node's outputs).
fn image_publisher(domain: u16) -> (ros2_client::Node, ros2_client::Publisher<Image>) {
    let (_ctx, mut node) = loopback_node(domain, "camera", NodeOptions::new().enable_rosout(false));
    let qos = QosProfile::subscription_default().history(History::KeepLast { depth: 2 });
    let topic = node
        .create_topic(&Name::new("/", "image").unwrap(), msg::image_type(), &qos)
        .unwrap();
    let publisher = node.create_publisher::<Image>(&topic, None).unwrap();
    (node, publisher)
}

#[test]
fn lazy_node_processes_only_while_an_output_has_a_subscriber() {
    let domain = 173;
    let node = start_node(domain, factory(), |c| {
        c.params = test_params();
        c.params.lazy = true;
    });
    let (camera, images) = image_publisher(domain);
    within(LIMIT, images.wait_for_subscription(&camera)).expect("node not discovered");
    let frame = mono8(
        &half(&read_pgm(&data("oxford-boat/img1.pgm"))),
        header(1, "cam"),
    );
    let deadline = Instant::now() + LIMIT;
    while node.stats().skipped_lazy < 3 && Instant::now() < deadline {
        images.publish(frame.clone()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let s = node.stats();
    assert!(s.skipped_lazy >= 3, "{s:?}");
    assert_eq!(s.processed, 0, "processed with nobody listening: {s:?}");

    // A subscriber appears: frames are processed again.
    let client = Client::new(domain, "/", "/image");
    client.wait_connected(LIMIT);
    let (kp, _) = client.process(
        &mono8(
            &half(&read_pgm(&data("oxford-boat/img1.pgm"))),
            header(2, "cam"),
        ),
        LIMIT,
    );
    assert!(!kp.keypoints.is_empty());
    assert!(node.stats().processed >= 1);
    node.stop();
}

#[test]
fn discovery_off_finds_nobody() {
    let domain = 174;
    let node = start_node(domain, factory(), |c| {
        c.discovery = Discovery {
            range: DiscoveryRange::Off,
            ..Discovery::default()
        };
    });
    let (camera, images) = image_publisher(domain);
    let seen = within(
        Duration::from_secs(5),
        images.wait_for_subscription(&camera),
    );
    assert!(seen.is_none(), "a node with discovery OFF was discovered");
    node.stop();
    // The same on LOCALHOST is found (the range, not the test, made the difference).
    let node = start_node(domain, factory(), |_| {});
    within(LIMIT, images.wait_for_subscription(&camera)).expect("LOCALHOST node not discovered");
    node.stop();
}
