import pytest

from collectors.objectname import ObjectNameError, decode_activemq, parse_object_name


def test_activemq_names_sorted_or_registered_are_equal():
    registered = parse_object_name("org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=orders")
    canonical = parse_object_name("org.apache.activemq:brokerName=localhost,destinationName=orders,destinationType=Queue,type=Broker")
    assert registered.as_dict() == canonical.as_dict()
    assert registered.canonical == canonical.canonical
    assert registered.matches("org.apache.activemq", type="Broker", destinationType="Queue")


def test_artemis_quoted_values_with_escapes():
    on = parse_object_name(
        'org.apache.activemq.artemis:broker="0.0.0.0",component=addresses,address="a,b=c",'
        'subcomponent=queues,routing-type="anycast",queue="q \\"x\\" \\\\ y"'
    )
    assert on["broker"] == "0.0.0.0"
    assert on["address"] == "a,b=c"
    assert on["queue"] == 'q "x" \\ y'
    assert on["routing-type"] == "anycast"
    assert not on.pattern


def test_patterns():
    assert parse_object_name("org.apache.activemq:type=Broker,brokerName=*").pattern
    assert parse_object_name("java.lang:type=GarbageCollector,*").pattern


def test_activemq_decoding():
    assert decode_activemq("a&qe;b&ast;c&amp;d") == "a?b*c=d"


@pytest.mark.parametrize("bad", ["nocolon", 'd:k="unterminated', "d:novalue"])
def test_bad_names(bad):
    with pytest.raises(ObjectNameError):
        parse_object_name(bad)


def test_canonical_keeps_patterns():
    on = parse_object_name("kafka.connect.mirror:type=MirrorSourceConnector,target=b,*")
    assert on.list_pattern and on.canonical == "kafka.connect.mirror:target=b,type=MirrorSourceConnector,*"
    on = parse_object_name("org.apache.activemq:type=Broker,brokerName=*")
    assert on.canonical == "org.apache.activemq:brokerName=*,type=Broker"
    literal = parse_object_name('d:name="a\\*b"')  # a quoted, escaped star is a literal star
    assert literal["name"] == "a*b" and literal.canonical == 'd:name="a\\*b"'
