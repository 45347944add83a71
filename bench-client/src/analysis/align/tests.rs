//! Alignment of built client and server views: a known offset and known delays come back out.

use super::*;

const THETA: f64 = 1_795_000_000.0;

/// Request `i` sent at `i` s (client clock), received 1 ms later; chunks written every 10 ms
/// from 50 ms after receipt and read 2 ms after each write; 5 tokens.
fn both_views(num: usize) -> (Vec<ClientRequest>, HashMap<String, ServerRequest>) {
    let mut client = Vec::new();
    let mut server = HashMap::new();
    for i in 0..num {
        let send = i as f64;
        let received = send + THETA + 0.001;
        let writes: Vec<f64> = (0..5).map(|k| received + 0.05 + 0.01 * k as f64).collect();
        let done = writes[4] + 0.0005;
        client.push(ClientRequest {
            request_id: format!("p-{i}"),
            send_s: send,
            chunk_times_s: writes.iter().map(|w| w - THETA + 0.002).collect(),
            end_s: done - THETA + 0.002,
            output_tokens: 5,
            ends_at_done: true,
        });
        let request = ServerRequest {
            received_unix_s: received,
            scheduled_unix_s: Some(received + 0.0001),
            delta_writes_unix_s: writes,
            done_unix_s: Some(done),
            completion_tokens: 5,
        };
        server.insert(format!("p-{i}"), request);
    }
    (client, server)
}

#[test]
fn a_known_offset_and_known_delays_are_recovered() {
    let (client, server) = both_views(20);
    let alignment = align(&client, &server).expect("aligned");
    assert_eq!(alignment.num_matched, 20);
    // The offset lies between θ − 2 ms (chunks) and θ + 1 ms (requests).
    let offset = alignment.offset;
    assert!(
        (offset.lower_bound_s - (THETA - 0.002)).abs() < 1e-6,
        "{offset:?}"
    );
    assert!(
        (offset.upper_bound_s - (THETA + 0.001)).abs() < 1e-6,
        "{offset:?}"
    );
    let ttft = &alignment.metrics[0];
    assert_eq!(ttft.name, "ttft");
    // Client TTFT = 1 + 50 + 2 ms; the server's = 50 ms.
    assert!((ttft.client.p50_s.expect("p50") - 0.053).abs() < 1e-6);
    assert!((ttft.server.p50_s.expect("p50") - 0.050).abs() < 1e-6);
    assert!((ttft.p50_difference_pct.expect("diff") - 6.0).abs() < 1e-3);
    // ITL: 10 ms on both sides.
    let itl = &alignment.metrics[2];
    assert!((itl.client.p50_s.expect("p50") - 0.01).abs() < 1e-6);
    assert!(itl.p50_difference_pct.expect("diff").abs() < 1e-3);
    // Transit in + delivery out add up to the TTFT difference (3 ms), however the offset splits it.
    let transit = alignment.request_transit.p50_s.expect("transit");
    let delivery = alignment.first_token_delivery.p50_s.expect("delivery");
    assert!(
        (transit + delivery - 0.003).abs() < 1e-6,
        "{transit} + {delivery}"
    );
    assert!(render_alignment(&alignment).contains("Matched 20 of 20"));
}

#[test]
fn unmatched_requests_are_left_out_and_a_closed_loop_gap_is_measured() {
    let (mut client, server) = both_views(5);
    client.push(ClientRequest {
        request_id: "unknown".into(),
        send_s: 100.0,
        chunk_times_s: vec![100.1],
        end_s: 100.2,
        output_tokens: 1,
        ends_at_done: true,
    });
    let alignment = align(&client, &server).expect("aligned");
    assert_eq!(
        (alignment.num_matched, alignment.num_client_requests),
        (5, 6)
    );
    // Request i + 1 is sent 1 s after request i was sent, ~0.09 s after it ended.
    let gap = alignment.client_dispatch_gap.p50_s.expect("gap");
    assert!((gap - (1.0 - 0.0935)).abs() < 1e-3, "{gap}");
    assert!(align(&client[5..], &server).is_err(), "nothing matched");
}

#[test]
fn a_client_whose_end_is_its_last_chunk_is_paired_with_the_last_write() {
    // vLLM's latency stops at the last text chunk, before [DONE]: pairing its end with [DONE]
    // would put the lower bound past the upper one.
    let (mut client, mut server) = both_views(4);
    for c in &mut client {
        c.end_s = c.chunk_times_s[c.chunk_times_s.len() - 1];
        c.ends_at_done = false;
    }
    for s in server.values_mut() {
        s.done_unix_s = s.done_unix_s.map(|done| done + 0.005);
    }
    let alignment = align(&client, &server).expect("consistent bounds");
    let e2el = &alignment.metrics[3];
    assert!(
        e2el.p50_difference_pct.expect("diff").abs() < 10.0,
        "{e2el:?}"
    );
    for c in &mut client {
        c.ends_at_done = true;
    }
    assert!(matches!(
        align(&client, &server),
        Err(OffsetError::Crossed { .. })
    ));
}
