"""The wire's models agree with the library's types: each record field by field, each request with its verb.

A model of :mod:`zep_core.server.wire` that restates a record of the library has its
fields, each as JSON carries it (a time as ISO text, a tuple as a list, a nested record
as its model); a request has the keyword arguments of the :class:`~zep_core.Memory`
method of its verb, with the same defaults. A field added to one side only fails here.
(The two reports, MaintenanceReportOut and ImportReportOut, are made from their
dataclasses, so they cannot drift.)
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Mapping
from datetime import datetime

import pytest
from zep_core import Entity, Episode, Fact, IngestResult, MaintenanceReport, Memory, Message
from zep_core.models import Discarded
from zep_core.server import wire
from zep_core.server.app import VERBS
from zep_core.transfer import ImportReport

#: How JSON carries a record's field types: the library's type → the wire's.
AS_SENT = {datetime: str, Fact: wire.FactOut, Message: wire.MessageOut, Discarded: wire.DiscardedOut}

RECORDS = [(wire.FactOut, Fact), (wire.EntityOut, Entity), (wire.MessageOut, Message), (wire.MessageIn, Message),
           (wire.EpisodeOut, Episode), (wire.DiscardedOut, Discarded), (wire.IngestResultOut, IngestResult)]

#: The arguments of a verb that do not travel in its JSON body: a callback and a file of the
#: client's, and the export that is the import's body itself.
LOCAL_ONLY = {"conversation_end_many": {"progress"}, "export_user": {"out"}, "import_user": {"lines"}}
#: Arguments the wire carries under another name (a timedelta as seconds).
RENAMED = {"refresh_entities": {"max_age": "max_age_s"}}


def as_sent(annotation: typing.Any) -> typing.Any:
    """The type JSON carries for a field of the library's type ``annotation``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(as_sent(a) for a in args)]
    if origin is tuple:
        return list[as_sent(args[0])]
    if origin is Mapping:
        return dict[args]
    return AS_SENT.get(annotation, annotation)


@pytest.mark.parametrize(("model", "record"), RECORDS, ids=lambda x: x.__name__)
def test_a_wire_record_has_the_fields_of_the_librarys_record(model, record):
    hints = typing.get_type_hints(record)
    fields = {f.name: as_sent(hints[f.name]) for f in dataclasses.fields(record)}
    assert {name: field.annotation for name, field in model.model_fields.items()} == fields


def test_a_message_sent_has_the_defaults_of_a_message():
    for field in dataclasses.fields(Message):
        sent = wire.MessageIn.model_fields[field.name]
        assert sent.is_required() == (field.default is dataclasses.MISSING), field.name
        if not sent.is_required():
            assert sent.default == field.default, field.name


@pytest.mark.parametrize("verb", VERBS, ids=lambda verb: verb.name)
def test_a_request_has_the_arguments_of_its_verb_and_their_defaults(verb):
    local = inspect.signature(getattr(Memory, verb.name)).parameters
    renamed = RENAMED.get(verb.name, {})
    expected = {renamed.get(name, name): p for name, p in local.items()
                if name != "self" and name not in LOCAL_ONLY.get(verb.name, ())}
    fields = verb.request.model_fields
    assert list(fields) == list(expected)
    for name, field in fields.items():
        default = expected[name].default
        assert field.is_required() == (default is inspect.Parameter.empty), name
        if name != "user_id" and not field.is_required():  # user_id: the key's user, not Memory's "default"
            assert field.default == default, name


REPORTS = [(wire.MaintenanceReportOut, MaintenanceReport(retried=2, completed=1, still_pending=("e2",),
                                                           entities_refreshed=3, index_writes_replayed=4,
                                                           failed=("e9",), sessions_ended=1),
            wire.maintenance_report_to_dict, wire.maintenance_report_from_dict),
           (wire.ImportReportOut, ImportReport(user_id="alice", episodes=2, entities=3, facts=4, chat_messages=5,
                                               reembedded=False, replaced=True),
            wire.import_report_to_dict, wire.import_report_from_dict)]


@pytest.mark.parametrize(("model", "report", "to_dict", "from_dict"), REPORTS, ids=["maintain", "import"])
def test_a_report_model_is_made_from_its_dataclass_and_describes_what_is_sent(model, report, to_dict, from_dict):
    assert list(model.model_fields) == [f.name for f in dataclasses.fields(report)]
    sent = to_dict(report)
    assert model.model_validate(sent).model_dump(mode="json") == sent
    assert from_dict(sent) == report


def test_one_episode_of_conversation_end_many_is_what_conversation_end_takes():
    assert issubclass(wire.EpisodeIn, wire.ConversationEndRequest)
    assert wire.ConversationEndManyRequest.model_fields["episodes"].annotation == list[wire.EpisodeIn]
