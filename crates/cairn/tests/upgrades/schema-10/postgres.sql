--
-- PostgreSQL database dump
--

\restrict YZqbzKl0NCMpPNw7n7YAR6LZZdF1Nfv91lMKMd47lMjfPdWSXqkbHZJWVwUSD0X

-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: account_roots; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.account_roots (
    account_id bigint NOT NULL,
    cid text NOT NULL,
    dag_size bigint NOT NULL,
    refs bigint NOT NULL
);


--
-- Name: accounts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.accounts (
    id bigint NOT NULL,
    name text NOT NULL,
    upload_limit bigint NOT NULL,
    quota bigint,
    stored_bytes bigint DEFAULT 0 NOT NULL,
    created_at bigint NOT NULL
);


--
-- Name: accounts_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.accounts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.accounts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: blocks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.blocks (
    multihash bytea NOT NULL,
    pack_id bigint NOT NULL,
    "offset" bigint NOT NULL,
    length bigint NOT NULL,
    without_links bigint
);


--
-- Name: cairn_schema; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.cairn_schema (
    version bigint NOT NULL
);


--
-- Name: collector; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.collector (
    id bigint NOT NULL
);


--
-- Name: dead_packs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.dead_packs (
    name text NOT NULL
);


--
-- Name: ipni_blocks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ipni_blocks (
    peer_id text NOT NULL,
    cid text NOT NULL,
    bytes bytea NOT NULL
);


--
-- Name: ipni_chains; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ipni_chains (
    peer_id text NOT NULL,
    head text,
    completed_at bigint NOT NULL,
    completed_id bigint NOT NULL,
    deleted_at bigint NOT NULL,
    deleted_id bigint NOT NULL
);


--
-- Name: ipni_contexts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.ipni_contexts (
    peer_id text NOT NULL,
    cid text NOT NULL
);


--
-- Name: nodes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.nodes (
    peer_id text NOT NULL,
    addrs text NOT NULL,
    gateway text,
    seen_at bigint NOT NULL
);


--
-- Name: operations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.operations (
    id bigint NOT NULL,
    upload_id text NOT NULL,
    account_id bigint NOT NULL,
    kind text NOT NULL,
    status text NOT NULL,
    status_message text NOT NULL,
    progress double precision NOT NULL,
    cid text,
    error_code text,
    error_message text,
    name text NOT NULL,
    size bigint NOT NULL,
    mime_type text NOT NULL,
    archive_mode text,
    profile text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    completed_at bigint,
    claimed_by text,
    claimed_until bigint,
    ready bigint DEFAULT 1 NOT NULL,
    dag_size bigint,
    deleted_at bigint,
    origins text DEFAULT ''::text NOT NULL,
    meta text DEFAULT '{}'::text NOT NULL
);


--
-- Name: operations_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.operations ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.operations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: packs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.packs (
    id bigint NOT NULL,
    name text NOT NULL,
    size bigint NOT NULL,
    created_at bigint NOT NULL
);


--
-- Name: packs_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.packs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.packs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: provide_progress; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.provide_progress (
    peer_id text NOT NULL,
    completed_at bigint NOT NULL,
    operation_id bigint NOT NULL,
    last_sweep_at bigint
);


--
-- Name: rate_buckets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rate_buckets (
    account_id bigint NOT NULL,
    endpoint text NOT NULL,
    tokens double precision NOT NULL,
    refilled_ms bigint NOT NULL,
    granted bigint NOT NULL
);


--
-- Name: tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tokens (
    id bigint NOT NULL,
    account_id bigint NOT NULL,
    prefix text NOT NULL,
    hash bytea NOT NULL,
    created_at bigint NOT NULL,
    revoked_at bigint
);


--
-- Name: tokens_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.tokens ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.tokens_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: tus_uploads; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.tus_uploads (
    id text NOT NULL,
    account_id bigint NOT NULL,
    operation_id bigint,
    length bigint,
    metadata text NOT NULL,
    concat text,
    parts text,
    state text NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL
);


--
-- Name: upload_leases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.upload_leases (
    upload_id text NOT NULL,
    holder text NOT NULL,
    until_ms bigint NOT NULL,
    stop_requested bigint NOT NULL
);


--
-- Data for Name: account_roots; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.account_roots (account_id, cid, dag_size, refs) FROM stdin;
1	QmQik6MghaFs9KPv8n9cayre4GurE7k9XiBmUqWtJF1Pkj	300132	1
1	bafybeifcp2jslzp4and2rojl24ocxfu32lt5qhzqhaylvizcmira4qs2va	50347	1
1	bafybeid3sohn44upzpydvzt4etjfritwixgbg7wt2hwq3mws4atrnqxxli	245	1
1	bafkreihcf3rd5kxxbtviprs6v2h7p4ngb7roz766hjmx3hnz3fsqqpc6le	930	2
\.


--
-- Data for Name: accounts; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.accounts (id, name, upload_limit, quota, stored_bytes, created_at) FROM stdin;
1	default	100000	\N	351654	1795839749245
\.


--
-- Data for Name: blocks; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.blocks (multihash, pack_id, "offset", length, without_links) FROM stdin;
\\x1220e22ee23eaaf70cea87c65eae8ff7f1a60fe2ecffde3a597d9db9d965083c5e59	1	56	930	0
\\x1220aa2eb401fec3905a709f0ef204d2b710ab83e05b720b89d952272e1b69d547d0	2	55	262158	1
\\x12200f7345c1900e76f77e11ba41c9d8ccaaeee6bb38e154cd096ed823ed8cdcfa9b	2	262250	37870	1
\\x122023603d2ba79ed02a9041e6a5fee86a7e1cae039f3bef912b7c8ae0345480bec0	2	300156	104	0
\\x1220a27e9325e5fc0347a8b92bd71c2b969bd2e7d81f303830baa32262220e425aa8	3	56	154	0
\\x12209170fb56f8268a5c8e17265b26893e131625f978253ca4e4a2376cc7304a8bf7	3	247	57	0
\\x1220b4d5deb2f19a59cc8683e443244245fad7c2e9a22e20b02dc2068698c69a9528	3	341	19	0
\\x12205d63c18883f2e1770a811e49b6169f8e7d3c0ffed4f4ecf7ab0ee150908fef53	3	397	59	0
\\x1220669bde2add1c22342215625debe32811fb9c0d3973018970f16792f69e53b084	3	495	50000	0
\\x1220d4e3377d99d6ae358664420a678ffb39d4ba10551f60810931de2b6ff5122f63	3	50532	58	0
\\x122077d7e2192bd2122a23492e2e6a6e80ee757651a4ca0f9b1e192835778123d0c1	4	55	26	0
\\x12202c8b08da5ce60398e1f19af0e5dccc744df274b826abe585eaba68c525434806	4	118	4	0
\\x122094c7a966007189e71fba004be42a7262dcb069ed8da0638f0ec50222cc4f9cc8	4	159	55	0
\\x122049012bb31eea3adaeadb4426460a2b753f81e2f4bb52b2c55c26859993c9e2e3	4	252	107	0
\\x12207b938ede728fcbf03ae67c24d258a27645cc137ed3d1ed0db2d2e02716c2f75a	4	396	53	0
\\x12201689b66207c33e7823a6f7d82ede9f1931e330df5cde95840bb1d031db03124d	5	55	27	0
\.


--
-- Data for Name: cairn_schema; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.cairn_schema (version) FROM stdin;
1
2
3
4
5
6
7
8
\.


--
-- Data for Name: collector; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.collector (id) FROM stdin;
1
\.


--
-- Data for Name: dead_packs; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.dead_packs (name) FROM stdin;
\.


--
-- Data for Name: ipni_blocks; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.ipni_blocks (peer_id, cid, bytes) FROM stdin;
\.


--
-- Data for Name: ipni_chains; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.ipni_chains (peer_id, head, completed_at, completed_id, deleted_at, deleted_id) FROM stdin;
\.


--
-- Data for Name: ipni_contexts; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.ipni_contexts (peer_id, cid) FROM stdin;
\.


--
-- Data for Name: nodes; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.nodes (peer_id, addrs, gateway, seen_at) FROM stdin;
\.


--
-- Data for Name: operations; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.operations (id, upload_id, account_id, kind, status, status_message, progress, cid, error_code, error_message, name, size, mime_type, archive_mode, profile, created_at, updated_at, completed_at, claimed_by, claimed_until, ready, dag_size, deleted_at, origins, meta) FROM stdin;
1	a4d636e4b924f7011852cea401513fa0	1	upload	completed	stored	100	bafkreihcf3rd5kxxbtviprs6v2h7p4ngb7roz766hjmx3hnz3fsqqpc6le	\N	\N	small.txt	930	text/plain	\N	unixfs-v1-2025	1795839749299	1795839749301	1795839749301	\N	\N	1	930	\N		{}
2	2d5ebb46404d12a015b3103f45987e4e	1	tus_upload	completed	stored	100	QmQik6MghaFs9KPv8n9cayre4GurE7k9XiBmUqWtJF1Pkj	\N	\N	large.bin	300000	application/octet-stream	extract	unixfs-v0-2015	1795839749321	1795839749341	1795839749341	c5e53f7f-1	1795839779330	1	300132	\N		{}
3	d56be5072ff18af155a9fbe130ea53e2	1	car_import	completed	stored	100	bafybeifcp2jslzp4and2rojl24ocxfu32lt5qhzqhaylvizcmira4qs2va	\N	\N	site	50631	application/vnd.ipld.car	\N	unixfs-v1-2025	1795839749463	1795839749465	1795839749465	\N	\N	1	50347	\N		{}
4	cfa973e2baa7b4eda4e0f425067a60cb	1	upload	completed	stored	100	bafybeid3sohn44upzpydvzt4etjfritwixgbg7wt2hwq3mws4atrnqxxli	\N	\N	archive.tar	3072	application/x-tar	extract	unixfs-v1-2025	1795839749485	1795839749493	1795839749493	c5e53f7f-0	1795839779486	1	245	\N		{}
6	e575113247d559c9decb0f7c3892bdac	1	pin	completed	stored	100	bafkreihcf3rd5kxxbtviprs6v2h7p4ngb7roz766hjmx3hnz3fsqqpc6le	\N	\N	kept	0		\N		1795839749625	1795839749627	1795839749627	\N	\N	1	930	\N		{}
5	001ae2acf8432be2bd24bf76022a49d9	1	upload	completed	stored	100	bafkreiawrg3geb6dhz4chjxx3axn5hyzghrtbx2432kyic5r2ay5waysju	\N	\N	deleted.txt	27	text/plain	\N	unixfs-v1-2025	1795839749610	1795839749642	1795839749611	\N	\N	1	27	1795839749642		{}
\.


--
-- Data for Name: packs; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.packs (id, name, size, created_at) FROM stdin;
1	dc3bd6b6f68054d92342e073f379e4bf.car	986	1795839749297
2	1845bc5ba593e617f54e834b785125ca.car	300260	1795839749339
3	506b569369cc1258c6807d9a2b9d8d6b.car	50590	1795839749462
4	68d4897d8a8651fa5112dcff0f28bb2f.car	449	1795839749492
5	c54db83773245662a2cfa452db9fb0f0.car	82	1795839749609
\.


--
-- Data for Name: provide_progress; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.provide_progress (peer_id, completed_at, operation_id, last_sweep_at) FROM stdin;
\.


--
-- Data for Name: rate_buckets; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.rate_buckets (account_id, endpoint, tokens, refilled_ms, granted) FROM stdin;
\.


--
-- Data for Name: tokens; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.tokens (id, account_id, prefix, hash, created_at, revoked_at) FROM stdin;
1	1	cairn_9ff4f62f	\\x3a138ea82e95c0a61a80b801efd212f99df2f8f2b06ad26f46bae8ee7fe998a9	1795839749247	\N
\.


--
-- Data for Name: tus_uploads; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.tus_uploads (id, account_id, operation_id, length, metadata, concat, parts, state, created_at, expires_at) FROM stdin;
2d5ebb46404d12a015b3103f45987e4e	1	2	300000	filename bGFyZ2UuYmlu,cid_profile dW5peGZzLXYwLTIwMTU=	\N	\N	complete	1795839749322	1795926149321
\.


--
-- Data for Name: upload_leases; Type: TABLE DATA; Schema: public; Owner: -
--

COPY public.upload_leases (upload_id, holder, until_ms, stop_requested) FROM stdin;
\.


--
-- Name: accounts_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.accounts_id_seq', 1, true);


--
-- Name: operations_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.operations_id_seq', 6, true);


--
-- Name: packs_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.packs_id_seq', 5, true);


--
-- Name: tokens_id_seq; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.tokens_id_seq', 1, true);


--
-- Name: account_roots account_roots_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.account_roots
    ADD CONSTRAINT account_roots_pkey PRIMARY KEY (account_id, cid);


--
-- Name: accounts accounts_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.accounts
    ADD CONSTRAINT accounts_name_key UNIQUE (name);


--
-- Name: accounts accounts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.accounts
    ADD CONSTRAINT accounts_pkey PRIMARY KEY (id);


--
-- Name: blocks blocks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.blocks
    ADD CONSTRAINT blocks_pkey PRIMARY KEY (multihash);


--
-- Name: collector collector_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.collector
    ADD CONSTRAINT collector_pkey PRIMARY KEY (id);


--
-- Name: dead_packs dead_packs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.dead_packs
    ADD CONSTRAINT dead_packs_pkey PRIMARY KEY (name);


--
-- Name: ipni_blocks ipni_blocks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ipni_blocks
    ADD CONSTRAINT ipni_blocks_pkey PRIMARY KEY (peer_id, cid);


--
-- Name: ipni_chains ipni_chains_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ipni_chains
    ADD CONSTRAINT ipni_chains_pkey PRIMARY KEY (peer_id);


--
-- Name: ipni_contexts ipni_contexts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.ipni_contexts
    ADD CONSTRAINT ipni_contexts_pkey PRIMARY KEY (peer_id, cid);


--
-- Name: nodes nodes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_pkey PRIMARY KEY (peer_id);


--
-- Name: operations operations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.operations
    ADD CONSTRAINT operations_pkey PRIMARY KEY (id);


--
-- Name: operations operations_upload_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.operations
    ADD CONSTRAINT operations_upload_id_key UNIQUE (upload_id);


--
-- Name: packs packs_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.packs
    ADD CONSTRAINT packs_name_key UNIQUE (name);


--
-- Name: packs packs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.packs
    ADD CONSTRAINT packs_pkey PRIMARY KEY (id);


--
-- Name: provide_progress provide_progress_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.provide_progress
    ADD CONSTRAINT provide_progress_pkey PRIMARY KEY (peer_id);


--
-- Name: rate_buckets rate_buckets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rate_buckets
    ADD CONSTRAINT rate_buckets_pkey PRIMARY KEY (account_id, endpoint);


--
-- Name: tokens tokens_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tokens
    ADD CONSTRAINT tokens_hash_key UNIQUE (hash);


--
-- Name: tokens tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tokens
    ADD CONSTRAINT tokens_pkey PRIMARY KEY (id);


--
-- Name: tus_uploads tus_uploads_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tus_uploads
    ADD CONSTRAINT tus_uploads_pkey PRIMARY KEY (id);


--
-- Name: upload_leases upload_leases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.upload_leases
    ADD CONSTRAINT upload_leases_pkey PRIMARY KEY (upload_id);


--
-- Name: operations_by_account; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX operations_by_account ON public.operations USING btree (account_id, id DESC);


--
-- Name: operations_completed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX operations_completed ON public.operations USING btree (completed_at, id) WHERE ((status = 'completed'::text) AND (cid IS NOT NULL));


--
-- Name: operations_deleted; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX operations_deleted ON public.operations USING btree (deleted_at, id) WHERE (deleted_at IS NOT NULL);


--
-- Name: operations_kept; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX operations_kept ON public.operations USING btree (account_id, created_at, id) WHERE (deleted_at IS NULL);


--
-- Name: operations_kept_by_root; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX operations_kept_by_root ON public.operations USING btree (account_id, cid) WHERE (deleted_at IS NULL);


--
-- Name: operations_queue; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX operations_queue ON public.operations USING btree (status, id);


--
-- Name: operations_roots; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX operations_roots ON public.operations USING btree (cid) WHERE (status = 'completed'::text);


--
-- Name: tus_uploads_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX tus_uploads_expiry ON public.tus_uploads USING btree (state, expires_at);


--
-- Name: account_roots account_roots_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.account_roots
    ADD CONSTRAINT account_roots_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: blocks blocks_pack_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.blocks
    ADD CONSTRAINT blocks_pack_id_fkey FOREIGN KEY (pack_id) REFERENCES public.packs(id);


--
-- Name: operations operations_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.operations
    ADD CONSTRAINT operations_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: tokens tokens_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tokens
    ADD CONSTRAINT tokens_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: tus_uploads tus_uploads_account_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tus_uploads
    ADD CONSTRAINT tus_uploads_account_id_fkey FOREIGN KEY (account_id) REFERENCES public.accounts(id);


--
-- Name: tus_uploads tus_uploads_operation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.tus_uploads
    ADD CONSTRAINT tus_uploads_operation_id_fkey FOREIGN KEY (operation_id) REFERENCES public.operations(id);


--
-- PostgreSQL database dump complete
--

\unrestrict YZqbzKl0NCMpPNw7n7YAR6LZZdF1Nfv91lMKMd47lMjfPdWSXqkbHZJWVwUSD0X

