"""ZepChatMemory in LangChain's classic chains: recent turns plus current facts, never superseded ones."""

from __future__ import annotations

import warnings

import pytest
from langchain_classic.chains import LLMChain
from langchain_core._api import LangChainDeprecationWarning
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder, PromptTemplate

from zep_langchain import EndPolicy, ZepChatMemory, ZepChatMessageHistory
from zep_langchain.testing import ScriptedChatModel


def chat_memory(memory, **options) -> ZepChatMemory:
    """Alice's chat memory; the context as its own variable unless the test says otherwise."""
    options.setdefault("context_key", "context")
    return ZepChatMemory(memory=memory, session_id="s1", user_id="alice", user_name="Alice", **options)


def chain_for(memory: ZepChatMemory, model) -> LLMChain:
    prompt = ChatPromptTemplate.from_messages([
        ("system", "You are a helpful assistant."),
        MessagesPlaceholder("context"),
        MessagesPlaceholder("history"),
        ("human", "{input}"),
    ])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainDeprecationWarning)  # LLMChain itself is deprecated
        return LLMChain(llm=model, prompt=prompt, memory=memory)


def prompt_text(call) -> str:
    return "\n".join(m.text for m in call)


def test_superseded_facts_never_reach_the_prompt_across_conversations(memory, clock):
    zep = chat_memory(memory, return_messages=True)
    model = ScriptedChatModel(replies=[AIMessage("Noted."), AIMessage("Lovely."), AIMessage("Congrats!"),
                                       AIMessage("You live in Berlin.")])
    chain = chain_for(zep, model)

    chain.invoke({"input": "I live in Paris."})
    chain.invoke({"input": "I like jazz."})
    zep.clear()  # ends conversation 1: its facts are learned, its turns forgotten
    clock.advance(days=60)
    chain.invoke({"input": "I moved to Berlin."})
    zep.clear()
    clock.advance(days=1)
    chain.invoke({"input": "Where do I live?"})

    assert "Paris" in prompt_text(model.calls[2])  # what was true while Alice said she moved
    last = model.calls[3]
    assert "Paris" not in prompt_text(last)
    context = [m for m in last if isinstance(m, SystemMessage) and "FACTS" in m.text]
    assert len(context) == 1
    assert "Alice lives in Berlin. (valid from 2024-03-01)" in context[0].text
    assert "Alice likes jazz." in context[0].text
    assert [m.text for m in last if isinstance(m, HumanMessage)] == ["Where do I live?"]


def test_within_one_conversation_only_recent_turns_and_current_facts_are_shown(memory, clock):
    zep = chat_memory(memory, return_messages=True, end_policy=1, recent_turns=1)
    model = ScriptedChatModel(replies=[AIMessage("Noted."), AIMessage("Congrats!"), AIMessage("Berlin.")])
    chain = chain_for(zep, model)
    chain.invoke({"input": "I live in Paris."})
    clock.advance(days=60)
    chain.invoke({"input": "I moved to Berlin."})
    chain.invoke({"input": "Where do I live?"})
    last = prompt_text(model.calls[2])
    assert "Paris" not in last
    assert "I moved to Berlin." in last and "Alice lives in Berlin." in last


def test_string_mode_renders_history_and_context_as_text(memory):
    zep = chat_memory(memory, end_policy=1)
    zep.save_context({"input": "I live in Paris."}, {"output": "Noted."})
    variables = zep.load_memory_variables({"input": "Where do I live?"})
    assert variables["history"] == "Human: I live in Paris.\nAI: Noted."
    assert variables["context"].startswith("FACTS (what is true now")
    assert "- Alice lives in Paris. (valid from 2024-01-01)" in variables["context"]


def test_a_string_prompt_chain_works_too(memory):
    zep = chat_memory(memory, end_policy=1)
    model = ScriptedChatModel(replies=[AIMessage("Noted."), AIMessage("Paris.")])
    prompt = PromptTemplate.from_template("{context}\n\n{history}\nHuman: {input}\nAI:")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainDeprecationWarning)
        chain = LLMChain(llm=model, prompt=prompt, memory=zep)
    chain.invoke({"input": "I live in Paris."})
    assert chain.invoke({"input": "Where do I live?"})["text"] == "Paris."
    assert "Alice lives in Paris." in prompt_text(model.calls[1])


def test_a_new_user_gets_empty_context_not_an_error(memory):
    zep = chat_memory(memory, return_messages=True)
    assert zep.load_memory_variables({"input": "Hello"}) == {"history": [], "context": []}


def test_save_context_stores_the_turn_at_once(memory):
    zep = chat_memory(memory)  # default policy: learn on clear()
    zep.save_context({"input": "I live in Paris."}, {"output": "Noted."})
    assert [(m.role, m.content) for m in memory.get_messages("s1", user_id="alice")] == [
        ("user", "I live in Paris."), ("assistant", "Noted.")]
    assert memory.unended_count("s1", user_id="alice") == 2
    assert zep.load_memory_variables({"input": "Where do I live?"})["context"] == ""  # not learned yet


def test_every_n_turns_ends_the_conversation_on_the_nth_turn(memory):
    zep = chat_memory(memory, end_policy=2)
    zep.save_context({"input": "I live in Paris."}, {"output": "Noted."})
    assert memory.unended_count("s1", user_id="alice") == 2
    zep.save_context({"input": "I like jazz."}, {"output": "Nice."})
    assert memory.unended_count("s1", user_id="alice") == 0
    assert "Alice likes jazz." in zep.load_memory_variables({"input": "What do I like?"})["context"]


def test_explicit_policy_learns_only_on_end_conversation(memory):
    zep = chat_memory(memory, end_policy="explicit")
    zep.save_context({"input": "I live in Paris."}, {"output": "Noted."})
    result = zep.end_conversation()
    assert "Alice lives in Paris." in [f.content for f in result.added]
    zep.save_context({"input": "I like jazz."}, {"output": "Nice."})
    zep.clear()  # explicit: forgets this turn without learning from it
    assert memory.get_messages("s1", user_id="alice") == []
    assert "jazz" not in zep.load_memory_variables({"input": "What do I like?"})["context"]


async def test_async_methods_store_and_load(memory):
    zep = chat_memory(memory, return_messages=True, end_policy=1)
    await zep.asave_context({"input": "I live in Paris."}, {"output": "Noted."})
    variables = await zep.aload_memory_variables({"input": "Where do I live?"})
    assert [m.content for m in variables["history"]] == ["I live in Paris.", "Noted."]
    assert "Alice lives in Paris." in variables["context"][0].content
    await zep.aclear()
    assert (await zep.aload_memory_variables({"input": "x"}))["history"] == []


def test_it_builds_its_own_history_and_warns_about_nothing(memory):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zep = chat_memory(memory)
    assert isinstance(zep.chat_memory, ZepChatMessageHistory)
    assert (zep.chat_memory.session_id, zep.chat_memory.user_id) == ("s1", "alice")
    assert zep.memory_variables == ["history", "context"]
    assert zep.end_policy == EndPolicy()


def test_a_foreign_chat_history_is_refused(memory):
    from langchain_core.chat_history import InMemoryChatMessageHistory

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainDeprecationWarning)  # the very default we avoid
        foreign = InMemoryChatMessageHistory()
    with pytest.raises(ValueError, match="ZepChatMessageHistory"):
        chat_memory(memory, chat_memory=foreign)
    with pytest.raises(ValueError, match="ZepChatMessageHistory"):
        chat_memory(memory, chat_memory=ZepChatMessageHistory(memory, "other", user_id="alice"))


def test_bad_options_are_refused(memory):
    with pytest.raises(ValueError, match="end_policy"):
        chat_memory(memory, end_policy="never")
    with pytest.raises(ValueError):
        ZepChatMemory(memory=memory, session_id="", user_id="alice")


def test_several_inputs_need_an_input_key(memory):
    zep = chat_memory(memory, end_policy=1)
    with pytest.raises(ValueError, match="One input key expected"):
        zep.save_context({"input": "I live in Paris.", "lang": "en"}, {"output": "Noted."})
    keyed = chat_memory(memory, end_policy=1, input_key="input")
    keyed.save_context({"input": "I live in Paris.", "lang": "en"}, {"output": "Noted."})
    assert "Paris" in keyed.load_memory_variables({"input": "Where do I live?", "lang": "en"})["context"]


def test_the_default_conversation_chain_prompt_gets_the_facts_in_its_history(memory):
    from langchain_classic.chains import ConversationChain

    zep = ZepChatMemory(memory=memory, session_id="s1", user_id="alice", user_name="Alice", end_policy=1)
    assert zep.memory_variables == ["history"]
    model = ScriptedChatModel(replies=[AIMessage("Noted."), AIMessage("In Paris.")])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LangChainDeprecationWarning)  # ConversationChain itself is deprecated
        chain = ConversationChain(llm=model, memory=zep)  # its default prompt: {history} and {input}
    assert sorted(chain.prompt.input_variables) == ["history", "input"]
    chain.invoke({"input": "I live in Paris."})
    assert chain.invoke({"input": "Where do I live?"})["response"] == "In Paris."
    prompt = prompt_text(model.calls[1])
    assert "System: FACTS (what is true now" in prompt and "Alice lives in Paris." in prompt
    assert prompt.index("Alice lives in Paris.") < prompt.index("Human: I live in Paris.")
    assert prompt.rstrip().endswith("Human: Where do I live?\nAI:")


def test_without_a_context_key_the_facts_lead_the_history_as_a_system_message(memory):
    zep = ZepChatMemory(memory=memory, session_id="s1", user_id="alice", user_name="Alice", end_policy=1,
                        return_messages=True)
    zep.save_context({"input": "I live in Paris."}, {"output": "Noted."})
    history = zep.load_memory_variables({"input": "Where do I live?"})["history"]
    assert [type(m) for m in history] == [SystemMessage, HumanMessage, AIMessage]
    assert "Alice lives in Paris. (valid from 2024-01-01)" in history[0].text
    nothing = ZepChatMemory(memory=memory, session_id="s9", user_id="newcomer", return_messages=True)
    assert nothing.load_memory_variables({"input": "Where do I live?"}) == {"history": []}


def test_a_missing_user_is_refused_by_name(memory):
    with pytest.raises(ValueError, match="user_id"):
        ZepChatMemory(memory=memory, session_id="s1")
    with pytest.raises(ValueError, match="Memory.open"):
        ZepChatMemory(memory="./data", session_id="s1", user_id="alice")
